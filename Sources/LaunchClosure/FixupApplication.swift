import LoaderCore

extension LaunchClosure {
    /// The value each bind target stands for in this launch's memory, computed once per
    /// launch (targets were checked to lie inside their images when the closure was read).
    public func bindTargetValues(_ memory: LaunchMemory) -> [UInt64] {
        bindTargets.map { target in
            switch target {
            case let .image(index, offset): memory.images[index].base &+ offset
            case let .absolute(value): value
            case .missingWeakImport: 0
            }
        }
    }

    /// Writes image `index`'s rebases, then its binds, straight from their runs: one bounds
    /// check per run, one target check per fixup, no allocation, no strings, no lookups.
    public func applyFixups(ofImage index: Int, memory: LaunchMemory, targetValues: [UInt64]) throws(LoadError) {
        let image = images[index]
        let vmSize = image.plan.vmSize
        do {
            var reader = ClosureReader(image.rebaseRuns, path: image.path)
            var target: UInt64 = 0
            let runs = try reader.count(of: "rebase run", minimumSize: 3)
            var location: UInt64 = 0
            for _ in 0..<runs {
                let (start, count, stride) = try FixupApplication.runHeader(&reader, after: location)
                let base = try memory.checkRun(image: index, start: start, count: count, stride: stride)
                var address = base &+ start
                for _ in 0..<count {
                    target = target &+ UInt64(bitPattern: try reader.sleb())
                    let offset = target & 0x00ff_ffff_ffff_ffff
                    guard offset < vmSize else {
                        throw LoadError.mapping(image: image.path, reason: "rebase target 0x\(String(offset, radix: 16)) is outside the image")
                    }
                    memory.storeInCheckedRun((base &+ offset) | (target & 0xff00_0000_0000_0000), at: address)
                    address &+= stride
                }
                location = start &+ UInt64(count - 1) &* stride
            }
            var binds = ClosureReader(image.bindRuns, path: image.path)
            let bindRuns = try binds.count(of: "bind run", minimumSize: 3)
            location = 0
            let targetCount = targetValues.count
            for _ in 0..<bindRuns {
                let (start, count, stride) = try FixupApplication.runHeader(&binds, after: location)
                let base = try memory.checkRun(image: index, start: start, count: count, stride: stride)
                var address = base &+ start
                for _ in 0..<count {
                    let targetIndex = try binds.uleb()
                    guard targetIndex < UInt64(targetCount) else {
                        throw LoadError.mapping(image: image.path, reason: "bind target index \(targetIndex) is past the table")
                    }
                    let addend = try binds.sleb()
                    memory.storeInCheckedRun(targetValues[Int(targetIndex)] &+ UInt64(bitPattern: addend), at: address)
                    address &+= stride
                }
                location = start &+ UInt64(count - 1) &* stride
            }
        } catch let error as ClosureError {
            throw .unusable(path: image.path, reason: "closure: \(error)")
        } catch let error as LoadError {
            throw error
        } catch {
            throw .unusable(path: image.path, reason: "\(error)")
        }
    }
}

enum FixupApplication {
    @inline(__always)
    static func runHeader(_ reader: inout ClosureReader, after location: UInt64) throws(ClosureError) -> (UInt64, Int, UInt64) {
        let (start, overflow) = location.addingReportingOverflow(try reader.uleb())
        let count = try reader.count(of: "fixup in run")
        let stride = try reader.uleb()
        guard !overflow, count > 0 else { throw reader.corrupt("empty or overflowing run") }
        return (start, count, stride)
    }
}

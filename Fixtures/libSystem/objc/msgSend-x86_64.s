# objc_msgSend and objc_msgSendSuper2 for x86_64 (System V): find the IMP through
# fixture_objc_lookup (C, runtime.c), then jump to it with the caller's arguments
# restored. Integer and pointer arguments only (rdi, rsi, rdx, rcx, r8, r9): the
# fixtures pass no floating-point arguments. A nil receiver returns 0.
    .text
    .globl _objc_msgSend
    .p2align 4
_objc_msgSend:
    testq %rdi, %rdi
    je 1f
    pushq %rdi
    pushq %rsi
    pushq %rdx
    pushq %rcx
    pushq %r8
    pushq %r9
    subq $8, %rsp                 # 16-byte alignment for the call
    callq _fixture_objc_lookup
    movq %rax, %r11
    addq $8, %rsp
    popq %r9
    popq %r8
    popq %rcx
    popq %rdx
    popq %rsi
    popq %rdi
    jmpq *%r11
1:
    xorl %eax, %eax
    xorl %edx, %edx
    retq

# objc_msgSendSuper2(struct objc_super *super, SEL op, ...): the receiver is super->receiver.
    .globl _objc_msgSendSuper2
    .p2align 4
_objc_msgSendSuper2:
    pushq %rdi
    pushq %rsi
    pushq %rdx
    pushq %rcx
    pushq %r8
    pushq %r9
    subq $8, %rsp
    callq _fixture_objc_lookup_super
    movq %rax, %r11
    addq $8, %rsp
    popq %r9
    popq %r8
    popq %rcx
    popq %rdx
    popq %rsi
    popq %rdi
    movq (%rdi), %rdi             # super->receiver
    jmpq *%r11

int gone_value = 2;

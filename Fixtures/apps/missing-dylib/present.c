int present_value = 1;

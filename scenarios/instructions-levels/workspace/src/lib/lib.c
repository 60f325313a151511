int lib;

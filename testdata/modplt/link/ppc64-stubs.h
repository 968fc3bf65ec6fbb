asm(".section .stubs,\"ax\",@nobits; .align 3; .previous");

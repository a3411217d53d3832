#include <stdio.h>
int add(int, int);
int mul(int, int);
int main(void) { printf("%d\n", add(2, mul(3, 4))); return 0; }

#include <stdio.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void leaf_a(void) { for (int i = 0; i < 2000000; i++) sink += i; }
__attribute__((noinline)) static void leaf_b(void) { for (int i = 0; i < 1000000; i++) sink ^= i; }
__attribute__((noinline)) static void mid(void) { leaf_a(); leaf_b(); }
int main(void) { for (int k = 0; k < 150; k++) { mid(); leaf_b(); } printf("%lu\n", sink); return 0; }

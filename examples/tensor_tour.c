/* placeholder */
#include <wick/wick.h>
int main(void) { return wk_init(); }

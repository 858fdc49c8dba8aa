#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
int main(){size_t n=1<<30; char *src=malloc(n), *dst=malloc(1<<20); memset(src,1,n); memset(dst,0,1<<20);
struct timespec a,b; long iters=2000000; unsigned long r=12345; clock_gettime(CLOCK_MONOTONIC,&a);
for(long i=0;i<iters;i++){ r=r*6364136223846793005UL+1442695040888963407UL; size_t off=((r>>20)%(n/4096))*4096; memcpy(dst+((i&255)*4096),src+off,4096);}
clock_gettime(CLOCK_MONOTONIC,&b); double ns=(b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec);
printf("4 KiB copy from a random page of a 1 GiB buffer: %.0f ns (%.0f ns/KiB)\n",ns/iters,ns/iters/4); return dst[5];}

/* A stand-in for Windows' bcryptprimitives.dll, for running the tests under
   wine 8 (Debian 12's), which lacks it: Rust's standard library asks it for
   random bytes (ProcessPrng), for HashMap's keys among others. This one gets
   them from RtlGenRandom (advapi32's SystemFunction036), as std did before
   Rust 1.78. Used by .ci/run only; never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        /* RtlGenRandom takes a 32-bit length. */
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}

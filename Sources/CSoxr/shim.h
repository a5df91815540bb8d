#ifndef TANDEM_CSOXR_SHIM_H
#define TANDEM_CSOXR_SHIM_H
#include <soxr.h>
#endif

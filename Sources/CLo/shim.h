#ifndef TANDEM_CLO_SHIM_H
#define TANDEM_CLO_SHIM_H
#include <lo/lo.h>
#include <lo/lo_lowlevel.h>
#endif

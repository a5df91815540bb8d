#ifndef TANDEM_CSNDFILE_SHIM_H
#define TANDEM_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif

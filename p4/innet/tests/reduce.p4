/* innet.p4 with 4 values per packet, for the reduce-to STF test (reduce.stf). */
#define INNET_K 4
#define INNET_SLOTS 16
#define INNET_PARAM_CHUNKS 16
#include "../../innet.p4"

/*
 * profile_uuid.c - a profile id's bytes and text (query.h "profile ids"; docs/api.md "Profile
 * ids"): pure functions, no store (the fuzz target links them alone).
 */
#include "query.h"
#include "core/encode.h"

#include <string.h>
#include <strings.h>

/*
 * The 128 bits, big-endian, of the id of the profile of series S at T (ns since 1970 as int64,
 * taken as its 64-bit two's complement): UUID version 8 (custom) with RFC 9562's variant,
 *
 *   bytes 0-5   T >> 16                       byte 6   0x80 | (T >> 12) & 0x0f
 *   byte 7      (T >> 4) & 0xff               byte 8   0x80 | (T & 0x0f) << 2 | S >> 56
 *   bytes 9-15  S & (2^56 - 1)
 *
 * so T's 64 bits and S's low 58 bits fit beside the 6 fixed bits, and ids of profiles after 1970
 * sort by time as text. Example: series 2 at 2026-11-30T07:00:07Z, T = 1796022007000000000 =
 * 0x18ecc07fe804e600:
 *
 *   18 ec c0 7f e8 04 | 8e | 60 | 80 | 00 00 00 00 00 00 02  ->  18ecc07f-e804-8e60-8000-000000000002
 */
bool ps_profile_uuid_make(uint64_t sid, int64_t ts, uint8_t u[16])
{
    if (sid > PS_PROFILE_ID_MAX_SID)
        return false;
    uint64_t t = (uint64_t)ts;
    for (int i = 0; i < 6; i++)
        u[i] = (uint8_t)(t >> (56 - 8 * i));
    u[6] = (uint8_t)(0x80 | ((t >> 12) & 0x0f));
    u[7] = (uint8_t)(t >> 4);
    u[8] = (uint8_t)(0x80 | ((t & 0x0f) << 2) | (sid >> 56));
    for (int i = 9; i < 16; i++)
        u[i] = (uint8_t)(sid >> (8 * (15 - i)));
    return true;
}

bool ps_profile_uuid_split(const uint8_t u[16], uint64_t *sid, int64_t *ts)
{
    if ((u[6] & 0xf0) != 0x80 || (u[8] & 0xc0) != 0x80)
        return false;
    uint64_t t = 0, s = u[8] & 0x03;
    for (int i = 0; i < 6; i++)
        t = t << 8 | u[i];
    t = t << 4 | (u[6] & 0x0f);
    t = t << 8 | u[7];
    t = t << 4 | ((u[8] >> 2) & 0x0f);
    for (int i = 9; i < 16; i++)
        s = s << 8 | u[i];
    *sid = s;
    *ts = (int64_t)t;
    return true;
}

void ps_profile_uuid_text(const uint8_t u[16], char out[PS_PROFILE_ID_LEN + 1])
{
    ps_uuid_text(u, out);
    out[PS_PROFILE_ID_LEN] = '\0';
}

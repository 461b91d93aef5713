/*
 * The C side of `crypto` (_guest/web/crypto.js): a ChaCha20 stream (RFC 7539, section 2.3)
 * keyed per run with 256 bits from the run record (fresh host entropy, or derived from the
 * run's seed), behind getRandomValues and randomUUID; and SHA-1, SHA-256, SHA-384 and SHA-512
 * (FIPS 180-4) behind crypto.subtle.digest.
 *
 * The SHA constants are as FIPS 180-4 section 4.2 and 5.3 define them: the first 32 (SHA-256)
 * or 64 (SHA-384/512) bits of the fractional parts of the square roots (initial values) and
 * cube roots (round constants) of the first primes; SHA-1's are floor(2^30 * sqrt(2, 3, 5, 10)).
 */
#include <string.h>
#include "guest.h"

/* ---- ChaCha20: the run's random stream */

static uint32_t chacha_key[8];
static uint32_t chacha_counter[4];   /* block counter (word 12) and nonce (words 13..15) */
static uint8_t chacha_block[64];
/* bytes of chacha_block not given out yet; zero (a new block is due) at first, so it is no
 * initialized data: a run's writes stay on the pages of the other statics it writes */
static size_t chacha_left;

static inline uint32_t rotl32(uint32_t x, int n)
{
    return (x << n) | (x >> (32 - n));
}

#define QUARTER(a, b, c, d)                                                                   \
    do {                                                                                      \
        a += b; d ^= a; d = rotl32(d, 16);                                                    \
        c += d; b ^= c; b = rotl32(b, 12);                                                    \
        a += b; d ^= a; d = rotl32(d, 8);                                                     \
        c += d; b ^= c; b = rotl32(b, 7);                                                     \
    } while (0)

/* the ChaCha20 block function: 20 rounds over constants | key | counter | nonce */
static void chacha_next_block(void)
{
    uint32_t in[16] = { 0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u };
    memcpy(in + 4, chacha_key, sizeof chacha_key);
    memcpy(in + 12, chacha_counter, sizeof chacha_counter);
    uint32_t x[16];
    memcpy(x, in, sizeof x);
    for (int i = 0; i < 10; i++) {
        QUARTER(x[0], x[4], x[8], x[12]);
        QUARTER(x[1], x[5], x[9], x[13]);
        QUARTER(x[2], x[6], x[10], x[14]);
        QUARTER(x[3], x[7], x[11], x[15]);
        QUARTER(x[0], x[5], x[10], x[15]);
        QUARTER(x[1], x[6], x[11], x[12]);
        QUARTER(x[2], x[7], x[8], x[13]);
        QUARTER(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++) {
        uint32_t v = x[i] + in[i];
        chacha_block[4 * i] = (uint8_t)v;
        chacha_block[4 * i + 1] = (uint8_t)(v >> 8);
        chacha_block[4 * i + 2] = (uint8_t)(v >> 16);
        chacha_block[4 * i + 3] = (uint8_t)(v >> 24);
    }
    /* the 32-bit block counter carries into the nonce: the stream never repeats in a run */
    for (int i = 0; i < 4 && ++chacha_counter[i] == 0; i++)
        ;
    chacha_left = sizeof chacha_block;
}

/* Called by qj_run with the run record's QJ_HDR_ENTROPY_* words: the key of this run's stream,
 * which starts at block 0 (the same key gives the same bytes). */
void crypto_seed(const uint32_t key[8])
{
    memcpy(chacha_key, key, sizeof chacha_key);
    memset(chacha_counter, 0, sizeof chacha_counter);
    chacha_left = 0;
}

static void random_fill(uint8_t *p, size_t n)
{
    while (n > 0) {
        if (chacha_left == 0)
            chacha_next_block();
        size_t k = chacha_left;
        if (k > n)
            k = n;
        memcpy(p, chacha_block + (sizeof chacha_block - chacha_left), k);
        chacha_left -= k;
        p += k;
        n -= k;
    }
}

/* ---- SHA-1 and SHA-256: 64-byte blocks, 32-bit words */

static inline uint32_t rd_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t rd_be64(const uint8_t *p)
{
    return (uint64_t)rd_be32(p) << 32 | rd_be32(p + 4);
}

static void sha1_block(void *state, const uint8_t *block)
{
    uint32_t *h = state, w[80];
    for (int t = 0; t < 16; t++)
        w[t] = rd_be32(block + 4 * t);
    for (int t = 16; t < 80; t++)
        w[t] = rotl32(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int t = 0; t < 80; t++) {
        uint32_t f, k;
        if (t < 20) {
            f = (b & c) | (~b & d);
            k = 0x5a827999u;
        } else if (t < 40) {
            f = b ^ c ^ d;
            k = 0x6ed9eba1u;
        } else if (t < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8f1bbcdcu;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6u;
        }
        uint32_t tmp = rotl32(a, 5) + f + e + k + w[t];
        e = d;
        d = c;
        c = rotl32(b, 30);
        b = a;
        a = tmp;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e;
}

static const uint32_t k256[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u,
    0x923f82a4u, 0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u,
    0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u,
    0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u,
    0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u,
    0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au,
    0x5b9cca4fu, 0x682e6ff3u, 0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,
    0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};

static inline uint32_t rotr32(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void sha256_block(void *state, const uint8_t *block)
{
    uint32_t *h = state, w[64];
    for (int t = 0; t < 16; t++)
        w[t] = rd_be32(block + 4 * t);
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr32(w[t - 15], 7) ^ rotr32(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr32(w[t - 2], 17) ^ rotr32(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t v[8];
    memcpy(v, h, sizeof v);
    for (int t = 0; t < 64; t++) {
        uint32_t e = v[4], a = v[0];
        uint32_t t1 = v[7] + (rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25)) +
                      ((e & v[5]) ^ (~e & v[6])) + k256[t] + w[t];
        uint32_t t2 = (rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22)) +
                      ((a & v[1]) ^ (a & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof v[0]);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++)
        h[i] += v[i];
}

/* ---- SHA-384 and SHA-512: 128-byte blocks, 64-bit words */

static const uint64_t k512[80] = {
    0x428a2f98d728ae22ull, 0x7137449123ef65cdull, 0xb5c0fbcfec4d3b2full,
    0xe9b5dba58189dbbcull, 0x3956c25bf348b538ull, 0x59f111f1b605d019ull,
    0x923f82a4af194f9bull, 0xab1c5ed5da6d8118ull, 0xd807aa98a3030242ull,
    0x12835b0145706fbeull, 0x243185be4ee4b28cull, 0x550c7dc3d5ffb4e2ull,
    0x72be5d74f27b896full, 0x80deb1fe3b1696b1ull, 0x9bdc06a725c71235ull,
    0xc19bf174cf692694ull, 0xe49b69c19ef14ad2ull, 0xefbe4786384f25e3ull,
    0x0fc19dc68b8cd5b5ull, 0x240ca1cc77ac9c65ull, 0x2de92c6f592b0275ull,
    0x4a7484aa6ea6e483ull, 0x5cb0a9dcbd41fbd4ull, 0x76f988da831153b5ull,
    0x983e5152ee66dfabull, 0xa831c66d2db43210ull, 0xb00327c898fb213full,
    0xbf597fc7beef0ee4ull, 0xc6e00bf33da88fc2ull, 0xd5a79147930aa725ull,
    0x06ca6351e003826full, 0x142929670a0e6e70ull, 0x27b70a8546d22ffcull,
    0x2e1b21385c26c926ull, 0x4d2c6dfc5ac42aedull, 0x53380d139d95b3dfull,
    0x650a73548baf63deull, 0x766a0abb3c77b2a8ull, 0x81c2c92e47edaee6ull,
    0x92722c851482353bull, 0xa2bfe8a14cf10364ull, 0xa81a664bbc423001ull,
    0xc24b8b70d0f89791ull, 0xc76c51a30654be30ull, 0xd192e819d6ef5218ull,
    0xd69906245565a910ull, 0xf40e35855771202aull, 0x106aa07032bbd1b8ull,
    0x19a4c116b8d2d0c8ull, 0x1e376c085141ab53ull, 0x2748774cdf8eeb99ull,
    0x34b0bcb5e19b48a8ull, 0x391c0cb3c5c95a63ull, 0x4ed8aa4ae3418acbull,
    0x5b9cca4f7763e373ull, 0x682e6ff3d6b2b8a3ull, 0x748f82ee5defb2fcull,
    0x78a5636f43172f60ull, 0x84c87814a1f0ab72ull, 0x8cc702081a6439ecull,
    0x90befffa23631e28ull, 0xa4506cebde82bde9ull, 0xbef9a3f7b2c67915ull,
    0xc67178f2e372532bull, 0xca273eceea26619cull, 0xd186b8c721c0c207ull,
    0xeada7dd6cde0eb1eull, 0xf57d4f7fee6ed178ull, 0x06f067aa72176fbaull,
    0x0a637dc5a2c898a6ull, 0x113f9804bef90daeull, 0x1b710b35131c471bull,
    0x28db77f523047d84ull, 0x32caab7b40c72493ull, 0x3c9ebe0a15c9bebcull,
    0x431d67c49c100d4cull, 0x4cc5d4becb3e42b6ull, 0x597f299cfc657e2aull,
    0x5fcb6fab3ad6faecull, 0x6c44198c4a475817ull,
};

static inline uint64_t rotr64(uint64_t x, int n)
{
    return (x >> n) | (x << (64 - n));
}

static void sha512_block(void *state, const uint8_t *block)
{
    uint64_t *h = state, w[80];
    for (int t = 0; t < 16; t++)
        w[t] = rd_be64(block + 8 * t);
    for (int t = 16; t < 80; t++) {
        uint64_t s0 = rotr64(w[t - 15], 1) ^ rotr64(w[t - 15], 8) ^ (w[t - 15] >> 7);
        uint64_t s1 = rotr64(w[t - 2], 19) ^ rotr64(w[t - 2], 61) ^ (w[t - 2] >> 6);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint64_t v[8];
    memcpy(v, h, sizeof v);
    for (int t = 0; t < 80; t++) {
        uint64_t e = v[4], a = v[0];
        uint64_t t1 = v[7] + (rotr64(e, 14) ^ rotr64(e, 18) ^ rotr64(e, 41)) +
                      ((e & v[5]) ^ (~e & v[6])) + k512[t] + w[t];
        uint64_t t2 = (rotr64(a, 28) ^ rotr64(a, 34) ^ rotr64(a, 39)) +
                      ((a & v[1]) ^ (a & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof v[0]);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++)
        h[i] += v[i];
}

/* ---- the digests crypto.subtle.digest offers, in the order of crypto.js's table */

typedef void (*BlockFn)(void *state, const uint8_t *block);

typedef struct {
    BlockFn block_fn;
    size_t block;      /* bytes per block: 64 or 128 */
    size_t word;       /* bytes per state word: 4 or 8 */
    size_t words;      /* state words */
    size_t out;        /* digest bytes */
    const void *iv;
} Digest;

static const uint32_t iv_sha1[5] = {
    0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u,
};
static const uint32_t iv_sha256[8] = {
    0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
    0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u,
};
static const uint64_t iv_sha384[8] = {
    0xcbbb9d5dc1059ed8ull, 0x629a292a367cd507ull, 0x9159015a3070dd17ull,
    0x152fecd8f70e5939ull, 0x67332667ffc00b31ull, 0x8eb44a8768581511ull,
    0xdb0c2e0d64f98fa7ull, 0x47b5481dbefa4fa4ull,
};
static const uint64_t iv_sha512[8] = {
    0x6a09e667f3bcc908ull, 0xbb67ae8584caa73bull, 0x3c6ef372fe94f82bull,
    0xa54ff53a5f1d36f1ull, 0x510e527fade682d1ull, 0x9b05688c2b3e6c1full,
    0x1f83d9abfb41bd6bull, 0x5be0cd19137e2179ull,
};

static const Digest digests[] = {
    { sha1_block, 64, 4, 5, 20, iv_sha1 },
    { sha256_block, 64, 4, 8, 32, iv_sha256 },
    { sha512_block, 128, 8, 8, 48, iv_sha384 },
    { sha512_block, 128, 8, 8, 64, iv_sha512 },
};

/* FIPS 180-4 section 5.1: the message, a 1 bit, zeros, then its length in bits (big-endian,
 * 64 or 128 bits) to fill the last block; out gets the state words big-endian, truncated */
static void digest_run(const Digest *d, const uint8_t *p, size_t n, uint8_t *out)
{
    uint64_t state[8];
    memcpy(state, d->iv, d->words * d->word);
    size_t full = n - n % d->block;
    for (size_t i = 0; i < full; i += d->block)
        d->block_fn(state, p + i);
    uint8_t tail[256];
    size_t rest = n - full, len_bytes = d->block / 8;
    size_t tail_len = rest + 1 + len_bytes <= d->block ? d->block : 2 * d->block;
    memset(tail, 0, tail_len);
    memcpy(tail, p + full, rest);
    tail[rest] = 0x80;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++)
        tail[tail_len - 1 - i] = (uint8_t)(bits >> (8 * i));
    for (size_t i = 0; i < tail_len; i += d->block)
        d->block_fn(state, tail + i);
    for (size_t i = 0; i < d->out; i++) {
        size_t w = i / d->word, shift = 8 * (d->word - 1 - i % d->word);
        uint64_t v = d->word == 4 ? ((uint32_t *)state)[w] : state[w];
        out[i] = (uint8_t)(v >> shift);
    }
}

/* ---- the natives crypto.js calls */

/* randomFill(u8): fills a Uint8Array view (crypto.js checks type and size first) */
static JSValue js_random_fill(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    size_t n;
    uint8_t *p = JS_GetUint8Array(ctx, &n, argc > 0 ? argv[0] : JS_UNDEFINED);
    if (!p && n == 0 && JS_HasException(ctx))
        return JS_EXCEPTION;
    if (p)
        random_fill(p, n);
    return JS_UNDEFINED;
}

/* fillTyped(view, max) -> true when it filled `view`, an integer typed array of at most `max`
 * bytes reaching the end of its buffer: getRandomValues' common case in one call. false for
 * anything else (not a typed array, a float array, too large, detached, out of bounds, a view
 * of part of a buffer), which crypto.js then checks and answers on its general path,
 * unchanged. */
static JSValue js_fill_typed(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    int64_t max;
    if (argc < 2 || JS_ToInt64(ctx, &max, argv[1]))
        return JS_EXCEPTION;
    int type = JS_GetTypedArrayType(argv[0]);
    if (type < JS_TYPED_ARRAY_UINT8C || type > JS_TYPED_ARRAY_BIG_UINT64)
        return JS_FALSE;
    size_t offset, length, size;
    JSValue buffer = JS_GetTypedArrayBuffer(ctx, argv[0], &offset, &length, NULL);
    if (JS_IsException(buffer)) {
        JS_FreeValue(ctx, JS_GetException(ctx)); /* out of bounds: the general path says so */
        return JS_FALSE;
    }
    uint8_t *p = (int64_t)length <= max ? JS_GetArrayBuffer(ctx, &size, buffer) : NULL;
    JS_FreeValue(ctx, buffer);
    if (!p) {
        if (JS_HasException(ctx))
            JS_FreeValue(ctx, JS_GetException(ctx)); /* detached */
        return JS_FALSE;
    }
    /* only a view that ends where its buffer ends: a length-tracking view's recorded length
     * can be stale after a resize (its current length is then the rest of the buffer), and
     * the general path reads the current one */
    if (offset > size || length != size - offset)
        return JS_FALSE;
    random_fill(p + offset, length);
    return JS_TRUE;
}

/* digest(index, u8) -> ArrayBuffer: index into digests[] */
static JSValue js_digest(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    int32_t index;
    if (argc < 2 || JS_ToInt32(ctx, &index, argv[0]))
        return JS_ThrowTypeError(ctx, "digest: bad arguments");
    if (index < 0 || (size_t)index >= sizeof digests / sizeof digests[0])
        return JS_ThrowRangeError(ctx, "digest: no such algorithm");
    size_t n;
    uint8_t *p = JS_GetUint8Array(ctx, &n, argv[1]);
    if (!p && JS_HasException(ctx))
        return JS_EXCEPTION;
    uint8_t out[64];
    digest_run(&digests[index], p ? p : (const uint8_t *)"", p ? n : 0, out);
    return JS_NewArrayBufferCopy(ctx, out, digests[index].out);
}

int web_crypto_natives(JSContext *ctx, JSValueConst native)
{
    if (JS_SetPropertyStr(ctx, native, "randomFill",
                          JS_NewCFunction(ctx, js_random_fill, "randomFill", 1)) < 0 ||
        JS_SetPropertyStr(ctx, native, "fillTyped",
                          JS_NewCFunction(ctx, js_fill_typed, "fillTyped", 2)) < 0 ||
        JS_SetPropertyStr(ctx, native, "digest", JS_NewCFunction(ctx, js_digest, "digest", 2)) < 0)
        return -1;
    return 0;
}

/*
 * The structural pass of the canonical key reader (canonical-key.ts, README "Scaling out") over
 * every line of a read chunk at once, in WebAssembly with 128-bit SIMD. It is readKey()'s loop over
 * a line's top-level keys, byte for byte: it finds `resource`, `ts`, `source`, `hostname`,
 * `host.name` and `host`, skips every other value (nested or escaped ones too), and declines
 * (-1) in every case readKey's loop declines. It also reads a plain UTC `ts` (the common case; any
 * other is left to model/time.ts). What it finds, readKey's tail (finishLook) reads on in
 * TypeScript, so the two paths share everything after the structure.
 *
 * Built by `node scripts/wasm.mjs` (clang and wasm-ld, Debian's clang and lld packages) into
 * src/profiles/key-scan-wasm.ts, which is committed; test/key-scan.test.ts checks that file is
 * this source compiled, and the two readers equal on every fixture line, on hostile lines and on
 * random ones.
 *
 * Memory: the caller copies the chunk to `b`, with at least 16 bytes after it that it owns (a
 * vector load may read up to 15 bytes past a line's end; no result depends on them).
 */
#include <stdint.h>
#include <wasm_simd128.h>

#define EXPORT __attribute__((visibility("default")))
typedef uint8_t u8;
typedef int32_t i32;

/* The keys read, by slot (as canonical-key.ts numbers them). */
enum { K_RESOURCE = 1, K_TS = 2, K_SOURCE = 3, K_HOSTNAME = 4, K_HOST_NAME = 5, K_HOST = 6 };
/* Kinds of a value. */
enum { NESTED = 0, STRING = 1, SCALAR = 2 };

/* Ints written per line: the seen bits (or -1), then start, end, kind and plain of slots 1 to 6. */
#define PER_LINE 25
/* A bit of the seen bits: the `ts` was read here (its epoch ms are in the line's double). */
#define TS_READ (1 << 16)
/* Timestamps from 2200 on are damage, not times (model/time.ts MAX_TS_MS: Date.UTC(2200, 0, 1)). */
#define MAX_TS_MS 7258118400000.0

static inline int key_of(const u8 *b, int s, int e) {
  switch (e - s) {
  case 2:
    return b[s] == 't' && b[s + 1] == 's' ? K_TS : 0;
  case 4:
    return b[s] == 'h' && b[s + 1] == 'o' && b[s + 2] == 's' && b[s + 3] == 't' ? K_HOST : 0;
  case 6:
    return b[s] == 's' && b[s + 1] == 'o' && b[s + 2] == 'u' && b[s + 3] == 'r' && b[s + 4] == 'c' && b[s + 5] == 'e' ? K_SOURCE : 0;
  case 8:
    if (b[s] == 'r') return b[s + 1] == 'e' && b[s + 2] == 's' && b[s + 3] == 'o' && b[s + 4] == 'u' && b[s + 5] == 'r' && b[s + 6] == 'c' && b[s + 7] == 'e' ? K_RESOURCE : 0;
    return b[s] == 'h' && b[s + 1] == 'o' && b[s + 2] == 's' && b[s + 3] == 't' && b[s + 4] == 'n' && b[s + 5] == 'a' && b[s + 6] == 'm' && b[s + 7] == 'e' ? K_HOSTNAME : 0;
  case 9:
    return b[s] == 'h' && b[s + 1] == 'o' && b[s + 2] == 's' && b[s + 3] == 't' && b[s + 4] == '.' && b[s + 5] == 'n' && b[s + 6] == 'a' && b[s + 7] == 'm' && b[s + 8] == 'e' ? K_HOST_NAME : 0;
  default:
    return 0;
  }
}

/* The first index in [i, n) of a quote or a backslash, else n (16 bytes at a time). */
static inline int find_quote_or_escape(const u8 *b, int i, int n) {
  const v128_t q = wasm_i8x16_splat('"'), bs = wasm_i8x16_splat('\\');
  while (i < n) {
    v128_t v = wasm_v128_load(b + i);
    uint32_t bits = wasm_i8x16_bitmask(wasm_v128_or(wasm_i8x16_eq(v, q), wasm_i8x16_eq(v, bs)));
    if (bits) {
      int j = i + __builtin_ctz(bits);
      return j < n ? j : n;
    }
    i += 16;
  }
  return n;
}

/* Likewise, or a byte of 0x80 or above (its top bit, which the bitmask reads, is set). */
static inline int find_quote_escape_or_high(const u8 *b, int i, int n) {
  const v128_t q = wasm_i8x16_splat('"'), bs = wasm_i8x16_splat('\\');
  while (i < n) {
    v128_t v = wasm_v128_load(b + i);
    uint32_t bits = wasm_i8x16_bitmask(wasm_v128_or(v, wasm_v128_or(wasm_i8x16_eq(v, q), wasm_i8x16_eq(v, bs))));
    if (bits) {
      int j = i + __builtin_ctz(bits);
      return j < n ? j : n;
    }
    i += 16;
  }
  return n;
}

/* End (exclusive) of the nested object or array starting at i (strings inside skipped), or -1. */
static int nested_end(const u8 *b, int i, int n) {
  int depth = 0;
  while (i < n) {
    u8 c = b[i];
    if (c == '"') {
      i++;
      while (i < n && b[i] != '"') i += b[i] == '\\' ? 2 : 1;
      if (i >= n) return -1;
    } else if (c == '{' || c == '[') {
      depth++;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
    i++;
  }
  return -1;
}

static inline int scalar_end(u8 c) { return c == ',' || c == '}' || c == ' ' || c == ']'; }

/* The line [start, end) of b: its seen bits, or -1 when readKey declines it. at[4 * (slot - 1)..] = start, end, kind, plain. */
static int scan(const u8 *b, int start, int end, i32 *at) {
  const int n = end;
  int i = start;
  while (i < n && b[i] == ' ') i++;
  if (i >= n || b[i] != '{') return -1;
  i++;
  while (i < n && b[i] == ' ') i++;
  int seen = 0;
  for (;;) {
    if (i >= n || b[i] != '"') return -1;
    const int ks = ++i;
    i = find_quote_or_escape(b, i, n);
    if (i >= n || b[i] != '"') return -1; /* an escaped key, or the line ends */
    const int bit = key_of(b, ks, i);
    i++;
    while (i < n && b[i] == ' ') i++;
    if (i >= n || b[i] != ':') return -1;
    i++;
    while (i < n && b[i] == ' ') i++;
    if (i >= n) return -1;
    const u8 c = b[i];
    int vs, ve, kind, plain = 1;
    if (c == '"') {
      vs = ++i;
      if (bit == 0) {
        for (;;) {
          i = find_quote_or_escape(b, i, n);
          if (i >= n) return -1;
          if (b[i] == '"') break;
          i += 2;
        }
      } else {
        for (;;) {
          i = find_quote_escape_or_high(b, i, n);
          if (i >= n) return -1;
          const u8 d = b[i];
          if (d == '"') break;
          plain = 0;
          i += d == '\\' ? 2 : 1;
        }
      }
      ve = i;
      i++;
      kind = STRING;
    } else if (c == '{' || c == '[') {
      if (bit != 0) return -1; /* a nested resource, ts or source, or ECS's host object */
      const int e = nested_end(b, i, n);
      if (e == -1) return -1;
      vs = i;
      ve = i = e;
      kind = NESTED;
    } else {
      vs = i;
      while (i < n && !scalar_end(b[i])) i++;
      ve = i;
      kind = SCALAR;
    }
    if (bit != 0) {
      if (seen & (1 << bit)) return -1; /* written twice: the full parse decides */
      seen |= 1 << bit;
      i32 *a = at + 4 * (bit - 1);
      a[0] = vs;
      a[1] = ve;
      a[2] = kind;
      a[3] = plain;
    }
    while (i < n && b[i] == ' ') i++;
    if (i >= n) return -1;
    if (b[i] == ',') {
      i++;
      while (i < n && b[i] == ' ') i++;
      continue;
    }
    if (b[i] != '}') return -1;
    i++;
    break;
  }
  while (i < n && b[i] == ' ') i++;
  if (i != n || !(seen & (1 << K_RESOURCE)) || !(seen & (1 << K_TS)) || at[2] != STRING) return -1;
  return seen;
}

static inline int digit(u8 c) { return c >= '0' && c <= '9'; }
static inline int two(const u8 *p) { return (p[0] - '0') * 10 + (p[1] - '0'); }

/* Days from 1970-01-01 to the Gregorian date y-m-d (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return (int64_t)era * 146097 + doe - 719468;
}

/*
 * The epoch ms of the timestamp [s, e) when it is plainly YYYY-MM-DDTHH:MM:SS, an optional fraction
 * of one to three digits, and Z (or z), a real date from 1970 to 2199: as model/time.ts reads it
 * (in integers, exact). 0 for anything else, which the TypeScript reads (time.ts decides).
 */
static int read_ts(const u8 *b, int s, int e, double *out) {
  const int len = e - s;
  if (len < 20 || len > 24) return 0;
  const u8 *p = b + s;
  static const int DIGITS[14] = {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18};
  for (int k = 0; k < 14; k++)
    if (!digit(p[DIGITS[k]])) return 0;
  if (p[4] != '-' || p[7] != '-' || p[10] != 'T' || p[13] != ':' || p[16] != ':') return 0;
  const int year = two(p) * 100 + two(p + 2), month = two(p + 5), day = two(p + 8), hour = two(p + 11), min = two(p + 14), sec = two(p + 17);
  static const int DAYS[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (month < 1 || month > 12 || day < 1 || day > (month == 2 && leap ? 29 : DAYS[month - 1]) || hour > 23 || min > 59 || sec > 59) return 0;
  int i = 19, frac = 0;
  if (p[i] == '.') {
    i++;
    const int first = i;
    int scale = 100;
    while (i < len - 1 && digit(p[i]) && i - first < 3) {
      frac += (p[i] - '0') * scale;
      scale /= 10;
      i++;
    }
    if (i == first) return 0;
  }
  if (i != len - 1 || (p[i] != 'Z' && p[i] != 'z')) return 0;
  const double ms = (double)(days_from_civil(year, month, day) * 86400000 + (int64_t)hour * 3600000 + (int64_t)min * 60000 + (int64_t)sec * 1000 + frac);
  if (ms < 0 || ms >= MAX_TS_MS) return 0;
  *out = ms;
  return 1;
}

/*
 * The partition of the key whose bytes are [s, e): FNV-1a 64 over them, modulo n (as
 * partition/hash.ts computes it in 32-bit halves; README "Scaling out").
 */
static inline i32 partition_of(const u8 *b, int s, int e, uint32_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int i = s; i < e; i++) {
    h ^= b[i];
    h *= 0x100000001b3ULL;
  }
  return (i32)(h % n);
}

/*
 * Lines k in [0, count) of the chunk b (len bytes): line k is [starts[k], ends[k]). Writes
 * PER_LINE ints per line to out, and the epoch ms of its `ts` to ts[k] when TS_READ is set. A
 * line whose bounds are not inside the chunk is declined. With n > 0 partitions, also parts[k]:
 * the partition of the line's `resource` when its bytes are the key as they are (plain: no
 * escape, no byte of 0x80 or above), else -1.
 */
EXPORT void scan_lines(const u8 *b, int len, const i32 *starts, const i32 *ends, int count, i32 *out, double *ts, i32 *parts, int n) {
  for (int k = 0; k < count; k++) {
    i32 *o = out + PER_LINE * k;
    const int s = starts[k], e = ends[k];
    int seen = s >= 0 && s <= e && e <= len ? scan(b, s, e, o + 1) : -1;
    /* A plain string `ts` (slot 2: start, end, kind, plain at o[5..8]) read here when it is plain enough. */
    if (seen != -1 && o[7] == STRING && o[8] == 1 && read_ts(b, o[5], o[6], ts + k)) seen |= TS_READ;
    o[0] = seen;
    /* The resource is slot 1 (start, end, kind, plain at o[1..4]); scan() declines a line whose resource is not a string. */
    if (n > 0) parts[k] = seen != -1 && o[4] == 1 ? partition_of(b, o[1], o[2], (uint32_t)n) : -1;
  }
}

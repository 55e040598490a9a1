// Exact top-k inner-product scan over 16-bit float matrices (IEEE binary16 and bfloat16) for Vigil's
// fp16_v1 / bf16_v1 search profiles, plus the matching encoders.
//
// Why a kernel of our own: usearch's exactSearch (and its JS binding) only scans f32/f64/i8 rows, so
// the 16-bit profiles were decoded block by block in JS (12x slower than fp32). Here each row is
// widened in registers (F16C's vcvtph2ps, a shift for bfloat16, NEON's fcvtl) and multiplied with a
// float32 query: the scan reads half the bytes of fp32 and never writes a decoded copy.
//
// The scan splits the rows across threads; each keeps its own min-heap of the k best rows, and the
// heaps are merged at the end. Order: higher score first, ties to the lower row, as the JS caller does.
#define _GNU_SOURCE 1
#define NAPI_VERSION 8
#include <node_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VS_X86 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#define VS_NEON 1
#endif

enum { KIND_F16 = 0, KIND_BF16 = 1 };

// ---- scalar conversions (reference semantics, also the fallback) ----

static inline float bits_to_float(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static inline uint32_t float_to_bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

static float half_to_float_scalar(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {
    if (mant == 0) return bits_to_float(sign);
    // Subnormal: value = mant * 2^-24.
    float v = (float)mant * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (mant << 13));
  return bits_to_float(sign | ((exp + 112) << 23) | (mant << 13));
}

// IEEE binary16, round to nearest even (the same results as toHalf() in src/search/profiles.ts).
static uint16_t float_to_half_scalar(float x) {
  uint32_t bits = float_to_bits(x);
  uint32_t sign = (bits >> 16) & 0x8000, exp = (bits >> 23) & 0xff, mant = bits & 0x7fffff;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000;
    int shift = 14 - e;
    uint32_t half = 1u << (shift - 1), m = mant >> shift, rest = mant & ((1u << shift) - 1);
    if (rest > half || (rest == half && (m & 1))) m++;
    return (uint16_t)(sign | m);
  }
  uint32_t m = mant >> 13, rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (m & 1))) {
    m++;
    if (m == 0x400) {
      m = 0;
      e++;
      if (e >= 0x1f) return (uint16_t)(sign | 0x7c00);
    }
  }
  return (uint16_t)(sign | ((uint32_t)e << 10) | m);
}

static inline float bf16_to_float(uint16_t b) { return bits_to_float((uint32_t)b << 16); }

// bfloat16, round to nearest even; NaN stays a quiet NaN (as toBfloat16() in profiles.ts).
static inline uint16_t float_to_bf16(float x) {
  uint32_t bits = float_to_bits(x);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffff)) return (uint16_t)((bits >> 16) | 0x40);
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);
}

static float dot_scalar(const uint16_t *a, const float *q, size_t n, int kind) {
  float s = 0;
  if (kind == KIND_F16) for (size_t i = 0; i < n; i++) s += half_to_float_scalar(a[i]) * q[i];
  else for (size_t i = 0; i < n; i++) s += bf16_to_float(a[i]) * q[i];
  return s;
}

// ---- SIMD dot products ----

#ifdef VS_X86
__attribute__((target("avx2,fma"))) static inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma,f16c"))) static inline __m256 load8(const uint16_t *p, int kind) {
  __m128i h = _mm_loadu_si128((const __m128i *)p);
  if (kind == KIND_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

__attribute__((target("avx2,fma,f16c"))) static float dot_avx2(const uint16_t *a, const float *q, size_t n, int kind) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(load8(a + i, kind), _mm256_loadu_ps(q + i), s0);
    s1 = _mm256_fmadd_ps(load8(a + i + 8, kind), _mm256_loadu_ps(q + i + 8), s1);
    s2 = _mm256_fmadd_ps(load8(a + i + 16, kind), _mm256_loadu_ps(q + i + 16), s2);
    s3 = _mm256_fmadd_ps(load8(a + i + 24, kind), _mm256_loadu_ps(q + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(load8(a + i, kind), _mm256_loadu_ps(q + i), s0);
  float s = hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  return s + dot_scalar(a + i, q + i, n - i, kind);
}

__attribute__((target("avx2,fma,f16c"))) static void encode_f16_avx2(const float *src, uint16_t *dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; i++) dst[i] = float_to_half_scalar(src[i]);
}

static int has_avx2_f16c(void) {
  static int cached = -1;
  if (cached < 0) {
    __builtin_cpu_init();
    cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  }
  return cached;
}
#endif

#ifdef VS_NEON
static inline float32x4_t widen4(const uint16_t *p, int kind) {
  uint16x4_t h = vld1_u16(p);
  if (kind == KIND_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
  return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

static float dot_neon(const uint16_t *a, const float *q, size_t n, int kind) {
  float32x4_t s0 = vdupq_n_f32(0), s1 = vdupq_n_f32(0), s2 = vdupq_n_f32(0), s3 = vdupq_n_f32(0);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = vfmaq_f32(s0, widen4(a + i, kind), vld1q_f32(q + i));
    s1 = vfmaq_f32(s1, widen4(a + i + 4, kind), vld1q_f32(q + i + 4));
    s2 = vfmaq_f32(s2, widen4(a + i + 8, kind), vld1q_f32(q + i + 8));
    s3 = vfmaq_f32(s3, widen4(a + i + 12, kind), vld1q_f32(q + i + 12));
  }
  for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, widen4(a + i, kind), vld1q_f32(q + i));
  float s = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
  return s + dot_scalar(a + i, q + i, n - i, kind);
}
#endif

typedef float (*dot_fn)(const uint16_t *, const float *, size_t, int);

static dot_fn pick_dot(void) {
#ifdef VS_X86
  if (has_avx2_f16c()) return dot_avx2;
#endif
#ifdef VS_NEON
  return dot_neon;
#endif
  return dot_scalar;
}

static const char *kernel_name(void) {
#ifdef VS_X86
  if (has_avx2_f16c()) return "avx2-f16c";
#endif
#ifdef VS_NEON
  return "neon";
#endif
  return "scalar";
}

// ---- top-k ----

typedef struct { float score; uint32_t row; } hit_t;

// a is worse than b: lower score, or the same score and a higher row.
static inline int worse(hit_t a, hit_t b) { return a.score < b.score || (a.score == b.score && a.row > b.row); }

// Min-heap on "worse": the root is the worst kept hit.
static void heap_push(hit_t *h, size_t *len, size_t cap, hit_t x) {
  if (*len < cap) {
    size_t i = (*len)++;
    while (i > 0) {
      size_t p = (i - 1) / 2;
      if (!worse(x, h[p])) break;
      h[i] = h[p];
      i = p;
    }
    h[i] = x;
    return;
  }
  if (!worse(h[0], x)) return;
  size_t i = 0, n = *len;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    hit_t mv = x;
    if (l < n && worse(h[l], mv)) { m = l; mv = h[l]; }
    if (r < n && worse(h[r], mv)) { m = r; mv = h[r]; }
    if (m == i) break;
    h[i] = h[m];
    i = m;
  }
  h[i] = x;
}

typedef struct {
  const uint16_t *data;
  const float *query;
  size_t dim, from, to, k;
  int kind;
  dot_fn dot;
  hit_t *heap;
  size_t len;
} task_t;

static void *scan_range(void *arg) {
  task_t *t = (task_t *)arg;
  t->len = 0;
  for (size_t r = t->from; r < t->to; r++) {
    hit_t x = { t->dot(t->data + r * t->dim, t->query, t->dim, t->kind), (uint32_t)r };
    heap_push(t->heap, &t->len, t->k, x);
  }
  return NULL;
}

static int by_rank(const void *a, const void *b) {
  hit_t x = *(const hit_t *)a, y = *(const hit_t *)b;
  if (worse(y, x)) return -1;
  if (worse(x, y)) return 1;
  return 0;
}

// Rows per thread below which another thread is not worth starting.
#define MIN_ROWS_PER_THREAD 8192
#define MAX_THREADS 64

// ---- N-API glue ----

#define CHECK(call) do { if ((call) != napi_ok) { napi_throw_error(env, NULL, "vector-scan: N-API call failed: " #call); return NULL; } } while (0)
#define FAIL(msg) do { napi_throw_type_error(env, NULL, "vector-scan: " msg); return NULL; } while (0)

static int get_u32(napi_env env, napi_value v, uint32_t *out) { return napi_get_value_uint32(env, v, out) == napi_ok; }

static int typed(napi_env env, napi_value v, napi_typedarray_type want, void **data, size_t *length) {
  bool is = false;
  napi_typedarray_type type;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return 0;
  if (napi_get_typedarray_info(env, v, &type, length, data, NULL, NULL) != napi_ok) return 0;
  return type == want;
}

static size_t cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (size_t)n : 1;
}

// scanTopK(data: Uint16Array, rows, dim, query: Float32Array, k, kind, threads) -> { rows: Uint32Array, scores: Float32Array }
static napi_value ScanTopK(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc != 7) FAIL("scanTopK expects 7 arguments");
  void *data, *query;
  size_t dataLen, queryLen;
  uint32_t rows, dim, k, kind, threads;
  if (!typed(env, argv[0], napi_uint16_array, &data, &dataLen)) FAIL("data must be a Uint16Array");
  if (!get_u32(env, argv[1], &rows) || !get_u32(env, argv[2], &dim) || !get_u32(env, argv[4], &k) || !get_u32(env, argv[5], &kind) || !get_u32(env, argv[6], &threads)) FAIL("rows, dim, k, kind and threads must be unsigned integers");
  if (!typed(env, argv[3], napi_float32_array, &query, &queryLen)) FAIL("query must be a Float32Array");
  if (dim == 0 || queryLen != dim) FAIL("query length must equal dim");
  if ((size_t)rows * dim > dataLen) FAIL("data holds fewer than rows * dim values");
  if (kind != KIND_F16 && kind != KIND_BF16) FAIL("kind must be 0 (f16) or 1 (bf16)");
  size_t want = k < rows ? k : rows;

  size_t nt = threads ? threads : cpu_count();
  size_t by_size = (rows + MIN_ROWS_PER_THREAD - 1) / MIN_ROWS_PER_THREAD;
  if (nt > by_size) nt = by_size;
  if (nt > MAX_THREADS) nt = MAX_THREADS;
  if (nt < 1) nt = 1;

  task_t tasks[MAX_THREADS];
  hit_t *heaps = want ? (hit_t *)malloc(sizeof(hit_t) * want * nt) : NULL;
  if (want && !heaps) FAIL("out of memory");
  dot_fn dot = pick_dot();
  for (size_t t = 0; t < nt; t++) {
    tasks[t] = (task_t){ (const uint16_t *)data, (const float *)query, dim, rows * t / nt, rows * (t + 1) / nt, want, (int)kind, dot, heaps + t * want, 0 };
  }
  if (want) {
    pthread_t ids[MAX_THREADS];
    size_t started = 0;
    for (size_t t = 1; t < nt; t++) {
      if (pthread_create(&ids[t], NULL, scan_range, &tasks[t]) != 0) break;
      started = t;
    }
    // Ranges whose thread could not start run here.
    for (size_t t = started + 1; t < nt; t++) scan_range(&tasks[t]);
    scan_range(&tasks[0]);
    for (size_t t = 1; t <= started; t++) pthread_join(ids[t], NULL);
  }

  // Merge: every thread's heap into one array, ranked, first `want`.
  size_t total = 0;
  for (size_t t = 0; t < nt; t++) total += tasks[t].len;
  hit_t *all = heaps;
  size_t w = 0;
  for (size_t t = 0; t < nt; t++) {
    memmove(all + w, tasks[t].heap, sizeof(hit_t) * tasks[t].len);
    w += tasks[t].len;
  }
  if (total) qsort(all, total, sizeof(hit_t), by_rank);
  size_t out = total < want ? total : want;

  napi_value rowsBuf, scoresBuf, rowsArr, scoresArr, result;
  void *rp, *sp;
  CHECK(napi_create_arraybuffer(env, out * 4, &rp, &rowsBuf));
  CHECK(napi_create_arraybuffer(env, out * 4, &sp, &scoresBuf));
  for (size_t i = 0; i < out; i++) {
    ((uint32_t *)rp)[i] = all[i].row;
    ((float *)sp)[i] = all[i].score;
  }
  free(heaps);
  CHECK(napi_create_typedarray(env, napi_uint32_array, out, rowsBuf, 0, &rowsArr));
  CHECK(napi_create_typedarray(env, napi_float32_array, out, scoresBuf, 0, &scoresArr));
  CHECK(napi_create_object(env, &result));
  CHECK(napi_set_named_property(env, result, "rows", rowsArr));
  CHECK(napi_set_named_property(env, result, "scores", scoresArr));
  return result;
}

// encodeHalf(src: Float32Array, dst: Uint16Array, dstOffset, kind)
static napi_value EncodeHalf(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc != 4) FAIL("encodeHalf expects 4 arguments");
  void *src, *dst;
  size_t srcLen, dstLen;
  uint32_t offset, kind;
  if (!typed(env, argv[0], napi_float32_array, &src, &srcLen)) FAIL("src must be a Float32Array");
  if (!typed(env, argv[1], napi_uint16_array, &dst, &dstLen)) FAIL("dst must be a Uint16Array");
  if (!get_u32(env, argv[2], &offset) || !get_u32(env, argv[3], &kind)) FAIL("dstOffset and kind must be unsigned integers");
  if ((size_t)offset + srcLen > dstLen) FAIL("dst is too short");
  const float *s = (const float *)src;
  uint16_t *d = (uint16_t *)dst + offset;
  if (kind == KIND_F16) {
#ifdef VS_X86
    if (has_avx2_f16c()) { encode_f16_avx2(s, d, srcLen); return NULL; }
#endif
    for (size_t i = 0; i < srcLen; i++) d[i] = float_to_half_scalar(s[i]);
  } else if (kind == KIND_BF16) {
    for (size_t i = 0; i < srcLen; i++) d[i] = float_to_bf16(s[i]);
  } else {
    FAIL("kind must be 0 (f16) or 1 (bf16)");
  }
  return NULL;
}

// decodeHalf(src: Uint16Array, srcOffset, dst: Float32Array, kind)
static napi_value DecodeHalf(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc != 4) FAIL("decodeHalf expects 4 arguments");
  void *src, *dst;
  size_t srcLen, dstLen;
  uint32_t offset, kind;
  if (!typed(env, argv[0], napi_uint16_array, &src, &srcLen)) FAIL("src must be a Uint16Array");
  if (!get_u32(env, argv[1], &offset) || !get_u32(env, argv[3], &kind)) FAIL("srcOffset and kind must be unsigned integers");
  if (!typed(env, argv[2], napi_float32_array, &dst, &dstLen)) FAIL("dst must be a Float32Array");
  if ((size_t)offset + dstLen > srcLen) FAIL("src is too short");
  if (kind != KIND_F16 && kind != KIND_BF16) FAIL("kind must be 0 (f16) or 1 (bf16)");
  const uint16_t *s = (const uint16_t *)src + offset;
  float *d = (float *)dst;
  for (size_t i = 0; i < dstLen; i++) d[i] = kind == KIND_F16 ? half_to_float_scalar(s[i]) : bf16_to_float(s[i]);
  return NULL;
}

// ---- mapFile: a file range as an ArrayBuffer backed by a private memory map ----
//
// Why: a restart reads the collection's vector snapshot (2 GiB at 1M fp32 faces). read() into fresh
// memory pays for zeroing and faulting in every anonymous page and for copying every byte from the page
// cache; a private map shares the page cache's pages and is faulted in on first touch (the kernel maps
// neighbouring pages per fault). MAP_PRIVATE + PROT_WRITE: the index may change rows in place (removals
// move rows); such pages are copied on write and the file is never written. The file must not be
// truncated while mapped (Vigil replaces snapshot files by rename, which keeps the mapped inode).

// MAP_POPULATE would write-fault a private writable map (a private copy of every page): pages are
// populated read-only with MADV_POPULATE_READ (Linux 5.14) instead; older kernels get a read-ahead hint.
#if defined(__linux__) && !defined(MADV_POPULATE_READ)
#define MADV_POPULATE_READ 22
#endif

typedef struct { void *base; size_t len; } mapping_t;

static void unmap_finalize(napi_env env, void *data, void *hint) {
  (void)env; (void)data;
  mapping_t *m = (mapping_t *)hint;
  munmap(m->base, m->len);
  free(m);
}

// mapFile(path: string, offset: number, length: number, populate: boolean): ArrayBuffer
static napi_value MapFile(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc != 4) FAIL("mapFile expects 4 arguments");
  char path[4096];
  size_t plen;
  if (napi_get_value_string_utf8(env, argv[0], path, sizeof(path), &plen) != napi_ok || plen >= sizeof(path) - 1) FAIL("path must be a string");
  int64_t offset, length;
  bool populate;
  if (napi_get_value_int64(env, argv[1], &offset) != napi_ok || napi_get_value_int64(env, argv[2], &length) != napi_ok || offset < 0 || length <= 0) FAIL("offset and length must be non-negative integers (length > 0)");
  if (napi_get_value_bool(env, argv[3], &populate) != napi_ok) FAIL("populate must be a boolean");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) { char msg[160]; snprintf(msg, sizeof msg, "vector-scan: cannot open the file: %s", strerror(errno)); napi_throw_error(env, NULL, msg); return NULL; }
  struct stat st;
  if (fstat(fd, &st) != 0 || (int64_t)st.st_size < offset + length) { close(fd); FAIL("the file is shorter than the range"); }
  long page = sysconf(_SC_PAGESIZE);
  int64_t start = offset - offset % page, delta = offset - start;
  size_t len = (size_t)(length + delta);
  void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, (off_t)start);
  int err = errno;
  close(fd);
  if (base == MAP_FAILED) { char msg[160]; snprintf(msg, sizeof msg, "vector-scan: mmap failed: %s", strerror(err)); napi_throw_error(env, NULL, msg); return NULL; }
#ifdef MADV_POPULATE_READ
  if (!populate || madvise(base, len, MADV_POPULATE_READ) != 0) madvise(base, len, MADV_WILLNEED);
#else
  madvise(base, len, MADV_WILLNEED);
#endif
  mapping_t *m = (mapping_t *)malloc(sizeof(mapping_t));
  if (!m) { munmap(base, len); FAIL("out of memory"); }
  m->base = base;
  m->len = len;
  napi_value ab;
  if (napi_create_external_arraybuffer(env, (char *)base + delta, (size_t)length, unmap_finalize, m, &ab) != napi_ok) {
    munmap(base, len);
    free(m);
    FAIL("cannot create an external ArrayBuffer");
  }
  return ab;
}

static napi_value Kernel(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value s;
  CHECK(napi_create_string_utf8(env, kernel_name(), NAPI_AUTO_LENGTH, &s));
  return s;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    { "scanTopK", NULL, ScanTopK, NULL, NULL, NULL, napi_enumerable, NULL },
    { "encodeHalf", NULL, EncodeHalf, NULL, NULL, NULL, napi_enumerable, NULL },
    { "decodeHalf", NULL, DecodeHalf, NULL, NULL, NULL, napi_enumerable, NULL },
    { "kernel", NULL, Kernel, NULL, NULL, NULL, napi_enumerable, NULL },
    { "mapFile", NULL, MapFile, NULL, NULL, NULL, napi_enumerable, NULL },
  };
  if (napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)

// capi.h: the book's variants behind a C interface, for a benchmark that times them and PyTorch's
// scaled_dot_product_attention in one process, on the same tensors (tools/bench_torch_sdpa.py
// --chapters, through ctypes). Built as libflashsteps_capi.so on the gpu backend only.
//
// Every function is safe to call without a GPU: the queries answer, fs_run returns an error.
#pragma once
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// One problem, as the harness's Problem (common/harness/problem.h) without an attn_mask.
typedef struct {
  int B, H, Lq, Lk, d;
  int dtype;   // 0 fp32, 1 fp16, 2 bf16 (attn::DType)
  int causal;  // 0 none, 1 top-left, 2 bottom-right (attn::Causal)
  float scale;
  // Chapter 10's settings in the results CSV's `mods` words (results/README.md; Problem::apply_mods):
  // "mask_mod=window window=256,0 softcap=30", "mask_mod=varlen seqlens=100,37 kv_heads=2",
  // "alibi_slopes=0.5,0.25" (H slopes, or B x H), "mask_mod=blocks block_size=128,128 kv_num_blocks=1,2
  // kv_indices=0,0,1" (FlexAttention's BlockMask lists); NULL or "none" for none. A packed batch's
  // tensors are [1, H, sum of lengths, d] (K, V: kv_heads heads), and Lq, Lk must be its sums.
  const char* mods;
} fs_problem;

int fs_variant_count(void);
const char* fs_variant_name(int i);
const char* fs_variant_chapter(int i);
int fs_variant_best(int i);  // 1 for the chapter's best variant (the one the tour runs)

// Why the variant cannot run the problem (dtype, head dim, features, grid limits; mods it cannot
// read), or "" if it can; NULL for an unknown variant.
const char* fs_unsupported(const char* variant, const fs_problem* p);
// Device memory of its own the variant needs (its N x N buffers, a block mask...), and the HBM bytes
// its cost model says it moves; -1 for an unknown variant or a problem that is not one.
double fs_workspace_bytes(const char* variant, const fs_problem* p);
double fs_hbm_bytes(const char* variant, const fs_problem* p);
// The table the kernels read beside the tensors (Problem::kernel_table): a mask_mod's rule's (a
// document's positions; a packed batch's cu_seqlens_q, cu_seqlens_k and a window's sides; a given
// block mask's block_q, block_kv, K/V blocks per row, then each block's class, 0 unlisted, 1 partial,
// 2 full), then the slopes of alibi_slopes= (B x H floats' bits, batch-major; a packed batch's
// sequences x H): its length, with its first `capacity` ints copied to `table` (which may be NULL).
// 0 when there is none; -1 for a problem that is not one (the reason in fs_last_error()). The caller
// copies it to the device for fs_run.
int fs_mod_table(const fs_problem* p, int* table, int capacity);
// Which keys each query sees under is_causal or the mask_mod (every head alike): Lq * Lk bytes, row by
// row, 1 visible and 0 masked, written to host memory. Returns 0, or 1 (fs_last_error()).
int fs_visible(const fs_problem* p, unsigned char* visible);
// Launches the variant's kernels on the legacy default stream, on device pointers in torch's
// contiguous [B, H, L, d] layout. `workspace` holds fs_workspace_bytes bytes (NULL when 0), `lse`
// B*H*Lq floats or NULL, `table` fs_mod_table's ints on the device (NULL when it has none). Every
// launch is checked; the kernels run asynchronously: call fs_synchronize before reading the output.
// Returns 0, or 1 with the reason in fs_last_error().
int fs_run(const char* variant, const fs_problem* p, const void* q, const void* k, const void* v, void* o,
           void* workspace, float* lse, const int* table);
// Waits for the device and returns 0, or 1 when a kernel failed (the message in fs_last_error()).
int fs_synchronize(void);
const char* fs_last_error(void);

// Decoding (chapter 08; common/harness/decode/decode.h), in flash_attn_with_kvcache's layout: q and o
// [B, Lq, Hq, d], the cache a pool [pages, page_size, Hkv, d] with block_table [B, max_pages]
// (unpaged: paged = 0, page_size = the capacity, max_pages = 1, sequence b in page b; block_table
// may then be NULL, and a paged variant given one reads it), cache_seqlens [B] on the device and the same lengths on the host
// (seqlens_host: the workspace and the baseline's grids are sized by them; the baseline checks them), k_new and v_new [B, Lq, Hkv, d] appended in place (NULL: no append).
typedef struct {
  int B, Hq, Hkv, Lq, d;
  int dtype;  // 1 fp16, 2 bf16
  int paged, page_size, max_pages;
  int causal;  // bottom-right aligned
  int splits;  // 0: the variant's heuristic
  int append;  // k_new, v_new given
  float scale;
  const int* seqlens_host;
} fs_decode_problem;

int fs_decode_variant_count(void);
const char* fs_decode_variant_name(int i);
int fs_decode_variant_best(int i);
const char* fs_decode_unsupported(const char* variant, const fs_decode_problem* p);  // NULL: unknown
double fs_decode_workspace_bytes(const char* variant, const fs_decode_problem* p);  // -1: unknown
int fs_decode_splits(const char* variant, const fs_decode_problem* p);                // what it will use
int fs_decode_run(const char* variant, const fs_decode_problem* p, const void* q, void* k_cache, void* v_cache,
                  const void* k_new, const void* v_new, void* o, const int* block_table, const int* cache_seqlens,
                  void* workspace);
const char* fs_commit(void);  // the commit the library was built from

#ifdef __cplusplus
}
#endif

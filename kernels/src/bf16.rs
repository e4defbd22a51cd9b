//! The encoder's fully connected layers as bfloat16 matrix products, on CPUs with AVX512_BF16.
//!
//! A product `x (rows, inputs) · W (inputs, outputs) + bias` rounds `x` and `W` to bfloat16
//! (8 bits of mantissa; round to nearest even) and sums in `f32` with `vdpbf16ps`, which
//! multiplies and adds two pairs of bfloat16 per 32-bit lane: 32 products per instruction
//! against 16 (AVX-512) or 8 (AVX2) for an `f32` fused multiply-add. Everything else in the
//! encoder (attention, layer norms, GELU, pooling) stays `f32`.
//!
//! Layout. The weights are packed once, at load: for each panel of [`PANEL`] output columns,
//! for each pair of inputs `p`, the panel's 64 columns as `(W[2p][c], W[2p+1][c])` pairs, so
//! that one 64-byte load holds the pairs of 16 columns. The rows of `x` are rounded per call
//! into row-major bfloat16, read as one 32-bit pair at a time and broadcast. A tile of six
//! rows by one panel keeps its 24 sums in registers through the whole input dimension.
//!
//! AMX. Where the CPU also has AMX tiles for bfloat16 ([`amx_supported`]: AMX-TILE and
//! AMX-BF16, and Linux grants the process the tile state), the same packed weights are
//! multiplied with `tdpbf16ps`, which takes a tile of 16 rows by 32 inputs and a tile of 16
//! pairs of inputs by 16 columns in one instruction: one pair-row of a panel is 16 columns of
//! 4 bytes, so a weight tile is 16 pair-rows read at the panel's stride, with no second
//! layout. Each task computes 32 rows by one panel in two 32 x 32 halves, four 16 x 16 sums
//! held in tiles through the whole input dimension; a task of fewer rows (the last of a
//! product, or all of a query's dozen tokens) configures its tiles with only those rows, and
//! one of 16 or fewer uses two sums a half. Padding to 32 rows instead, a product of 8 to 16
//! rows took 1.3 to 2.2 times as long (the encoder's four shapes, three rounds each in turns,
//! Xeon with AMX), one of 100 or 140 rows 1.0 to 1.2 times; the model one text at a time ran
//! 423-438 texts/s against 480-487. Measured on one Xeon: 4 to 6 times the throughput of the
//! AVX-512 kernel (docs/BENCHMARKS.md).
//!
//! A [`PackedDense`] exists only where the CPU can run it ([`supported`]); the encoder keeps
//! `f32` weights elsewhere.

use half::bf16;
use rayon::prelude::*;

use crate::cpu::Isa;
use crate::products::PANEL;
#[cfg(target_arch = "x86_64")]
use crate::products::{
    by_height, for_each_task, for_each_tile, SharedOut, FETCH_AHEAD, ROWS_PER_TASK,
};
#[cfg(target_arch = "x86_64")]
use std::mem::MaybeUninit;

/// AMX: rows of `x` per task (two tiles of 16).
const AMX_ROWS: usize = 32;
/// AMX: inputs per tile step (16 rows of 64 bytes, 32 bfloat16, in an `x` tile).
const AMX_DEPTH: usize = 32;

/// Whether this CPU runs bfloat16 products (AVX-512 F and BF16, detected once).
pub fn supported() -> bool {
    Isa::Avx512Bf16.available()
}

/// Whether this CPU and the operating system run AMX bfloat16 tiles: AVX512_BF16 (for the
/// rounding), AMX-TILE and AMX-BF16 (CPUID leaf 7), and Linux's permission for the process to
/// use the tile data state (`arch_prctl(ARCH_REQ_XCOMP_PERM)`, asked once).
pub fn amx_supported() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        static DETECTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| {
            let leaf7 = std::arch::x86_64::__cpuid_count(7, 0);
            let (amx_bf16, amx_tile) = (leaf7.edx >> 22 & 1 == 1, leaf7.edx >> 24 & 1 == 1);
            supported() && amx_bf16 && amx_tile && amx::request_tile_state()
        })
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        false
    }
}

/// The variants of [`PackedDense`]'s product: `vdpbf16ps` in AVX-512 registers, and AMX
/// `tdpbf16ps` in tiles. (Its scalar reading is the tests' reference; CPUs with neither keep
/// the encoder's `f32` weights.)
pub const VARIANTS: [Isa; 2] = [Isa::Avx512Bf16, Isa::Amx];

/// A fully connected layer packed for bfloat16 products.
pub struct PackedDense {
    inputs: usize,
    outputs: usize,
    unit: Isa,
    /// `outputs / PANEL` panels of `inputs / 2` pairs of `PANEL` columns, two halves each.
    panels: Vec<u16>,
    bias: Vec<f32>,
}

impl PackedDense {
    /// Packs `weight`, `(inputs, outputs)` row-major, and `bias` (`outputs`), for AMX tiles
    /// where [`amx_supported`] and the number of inputs is a multiple of 32 (one tile's
    /// depth), for AVX-512 otherwise. `None` when this CPU cannot run the products
    /// ([`supported`]) or the shape does not fit the layout (an odd number of inputs, outputs
    /// not a multiple of 64, or lengths that do not match).
    pub fn pack(weight: &[f32], inputs: usize, outputs: usize, bias: &[f32]) -> Option<Self> {
        let unit = if amx_supported() && inputs.is_multiple_of(AMX_DEPTH) {
            Isa::Amx
        } else {
            Isa::Avx512Bf16
        };
        Self::pack_with(unit, weight, inputs, outputs, bias)
    }

    /// As [`PackedDense::pack`], for the variant `unit` (one of [`VARIANTS`]); `None` also
    /// where the CPU cannot run it, or for AMX when the inputs are not a multiple of 32.
    pub fn pack_with(
        unit: Isa,
        weight: &[f32],
        inputs: usize,
        outputs: usize,
        bias: &[f32],
    ) -> Option<Self> {
        let fits = match unit {
            Isa::Avx512Bf16 => true,
            Isa::Amx => inputs.is_multiple_of(AMX_DEPTH),
            _ => false,
        };
        if !fits || !unit.available() {
            return None;
        }
        let mut packed = Self::pack_layout(weight, inputs, outputs, bias)?;
        packed.unit = unit;
        Some(packed)
    }

    /// The packing itself, on any CPU (tests check the layout everywhere).
    fn pack_layout(weight: &[f32], inputs: usize, outputs: usize, bias: &[f32]) -> Option<Self> {
        if inputs == 0
            || !inputs.is_multiple_of(2)
            || outputs == 0
            || !outputs.is_multiple_of(PANEL)
            || weight.len() != inputs.checked_mul(outputs)?
            || bias.len() != outputs
        {
            return None;
        }
        let pairs = inputs / 2;
        let mut panels = vec![0u16; inputs * outputs];
        for (panel, block) in panels.chunks_exact_mut(pairs * PANEL * 2).enumerate() {
            for (pair, row) in block.chunks_exact_mut(PANEL * 2).enumerate() {
                for (column, slot) in row.chunks_exact_mut(2).enumerate() {
                    let c = panel * PANEL + column;
                    slot[0] = bf16::from_f32(weight[2 * pair * outputs + c]).to_bits();
                    slot[1] = bf16::from_f32(weight[(2 * pair + 1) * outputs + c]).to_bits();
                }
            }
        }
        Some(PackedDense {
            inputs,
            outputs,
            unit: Isa::Avx512Bf16,
            panels,
            bias: bias.to_vec(),
        })
    }

    pub fn inputs(&self) -> usize {
        self.inputs
    }

    pub fn outputs(&self) -> usize {
        self.outputs
    }

    pub fn unit(&self) -> Isa {
        self.unit
    }

    /// `x · W + bias` for `x` of `rows` rows (`x.len() / inputs`), into a new `rows x outputs`
    /// buffer. `None` when `x` is not a whole number of rows (or off x86-64, where no
    /// `PackedDense` is ever made).
    pub fn forward(&self, x: &[f32]) -> Option<Vec<f32>> {
        if !x.len().is_multiple_of(self.inputs) {
            return None;
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
        #[cfg(target_arch = "x86_64")]
        {
            if self.unit == Isa::Amx {
                return Some(self.forward_amx(x));
            }
            let rows = x.len() / self.inputs;
            let len = rows * self.outputs;
            let mut out: Vec<f32> = Vec::with_capacity(len);
            let a = to_bf16_rows(x, x.len());
            let out_ptr = SharedOut::new(out.as_mut_ptr());
            for_each_task(
                rows,
                self.outputs / PANEL,
                ROWS_PER_TASK,
                |first, count, panel| {
                    // SAFETY: a `PackedDense` exists only where `supported()` (`pack_with`); each
                    // task writes only its own rows of its own panel's columns, inside `out`'s
                    // capacity.
                    unsafe { self.block(&a, first, count, panel, &out_ptr) };
                },
            );
            // SAFETY: the tasks wrote every row of every panel: all `len` floats.
            unsafe { out.set_len(len) };
            Some(out)
        }
    }

    /// [`PackedDense::forward`] with AMX tiles: one task per 32 rows (fewer in the last) and
    /// panel.
    #[cfg(target_arch = "x86_64")]
    fn forward_amx(&self, x: &[f32]) -> Vec<f32> {
        let rows = x.len() / self.inputs;
        let len = rows * self.outputs;
        let mut out: Vec<f32> = Vec::with_capacity(len);
        let a = to_bf16_rows(x, x.len());
        let pairs = self.inputs / 2;
        let out_ptr = SharedOut::new(out.as_mut_ptr());
        for_each_task(
            rows,
            self.outputs / PANEL,
            AMX_ROWS,
            |first, count, panel| {
                // Not zeroed: `amx::panel` writes the task's rows, the only ones read below
                // (zeroing the 8 KB made the encoder's products 1-4 % slower, AMX 167).
                let mut sums = MaybeUninit::<[f32; AMX_ROWS * PANEL]>::uninit();
                let a_rows = &a[first * self.inputs..(first + count) * self.inputs];
                let b = &self.panels[panel * pairs * PANEL * 2..(panel + 1) * pairs * PANEL * 2];
                // SAFETY: a `PackedDense` with `Isa::Amx` exists only where `amx_supported()`
                // and the inputs are a multiple of `AMX_DEPTH` (`pack_with`); `a_rows` holds the
                // task's `count` rows (1 to 32) and `b` one whole panel.
                unsafe { amx::panel(a_rows, count, self.inputs, b, &mut sums) };
                // SAFETY: `amx::panel` wrote all `PANEL` columns of rows `0..count`.
                let sums = unsafe {
                    std::slice::from_raw_parts(sums.as_ptr().cast::<f32>(), count * PANEL)
                };
                let bias = &self.bias[panel * PANEL..(panel + 1) * PANEL];
                for r in 0..count {
                    // SAFETY: each task writes only its own rows of its own panel's columns,
                    // inside `out`'s capacity (not yet initialised: hence `MaybeUninit`).
                    let dst = unsafe {
                        std::slice::from_raw_parts_mut(
                            out_ptr
                                .at((first + r) * self.outputs + panel * PANEL)
                                .cast::<MaybeUninit<f32>>(),
                            PANEL,
                        )
                    };
                    for ((d, s), b) in dst.iter_mut().zip(&sums[r * PANEL..]).zip(bias) {
                        *d = MaybeUninit::new(s + b);
                    }
                }
            },
        );
        // SAFETY: the tasks wrote every row (`count` of each block) of every panel: all `len`
        // floats.
        unsafe { out.set_len(len) };
        out
    }

    /// Rows `first..first + count` of panel `panel`, tile by tile. The first tile fetches the
    /// panel ahead of its reads ([`FETCH_AHEAD`]), as in the `f32` kernel.
    ///
    /// # Safety
    /// The CPU supports AVX-512 F and BF16; `first + count <= rows` of `a`; `out` is the
    /// `rows x outputs` output, and no other thread writes these rows of this panel.
    #[cfg(target_arch = "x86_64")]
    unsafe fn block(&self, a: &[u16], first: usize, count: usize, panel: usize, out: &SharedOut) {
        let pairs = self.inputs / 2;
        let b = &self.panels[panel * pairs * PANEL * 2..(panel + 1) * pairs * PANEL * 2];
        let bias = &self.bias[panel * PANEL..(panel + 1) * PANEL];
        for_each_tile(first, count, |row, take| {
            let a_rows = &a[row * self.inputs..(row + take) * self.inputs];
            // SAFETY: the caller's guarantees; `out` holds `rows x outputs` floats.
            unsafe {
                let dst = out.at(row * self.outputs + panel * PANEL);
                by_height!(
                    take,
                    row == first,
                    tile(a_rows, pairs, b, bias, dst, self.outputs)
                );
            }
        });
    }

    /// The same product read straight from the packed layout, one scalar at a time (tests).
    #[cfg(test)]
    fn forward_scalar(&self, x: &[f32]) -> Vec<f32> {
        let rows = x.len() / self.inputs;
        let pairs = self.inputs / 2;
        let mut out = vec![0.0f32; rows * self.outputs];
        for r in 0..rows {
            let xr: Vec<f32> = x[r * self.inputs..(r + 1) * self.inputs]
                .iter()
                .map(|&v| bf16::from_f32(v).to_f32())
                .collect();
            for c in 0..self.outputs {
                let (panel, column) = (c / PANEL, c % PANEL);
                let mut sum = 0.0f32;
                for p in 0..pairs {
                    let at = ((panel * pairs + p) * PANEL + column) * 2;
                    sum += xr[2 * p] * bf16::from_bits(self.panels[at]).to_f32()
                        + xr[2 * p + 1] * bf16::from_bits(self.panels[at + 1]).to_f32();
                }
                out[r * self.outputs + c] = sum + self.bias[c];
            }
        }
        out
    }
}

/// `x` rounded to bfloat16 (round to nearest even), in the same row-major order, followed by
/// zeros up to `len` halves. Only the padding is zeroed: the rest is written once, rounded.
#[cfg(target_arch = "x86_64")]
fn to_bf16_rows(x: &[f32], len: usize) -> Vec<u16> {
    let len = len.max(x.len());
    let mut out: Vec<u16> = Vec::with_capacity(len);
    let (rounded, padding) = out.spare_capacity_mut()[..len].split_at_mut(x.len());
    padding.fill(MaybeUninit::new(0));
    rounded
        .par_chunks_mut(16 * 1024)
        .zip(x.par_chunks(16 * 1024))
        // SAFETY: only called from `forward`, which runs where `supported()`.
        .for_each(|(out, x)| unsafe { round_bf16(x, out) });
    // SAFETY: `round_bf16` wrote one half for each of `x`, and the padding is zeros.
    unsafe { out.set_len(len) };
    out
}

/// Writes `out[i]`, `x[i]` rounded, for every `i` of `x` (`out` as long as `x`).
///
/// # Safety
/// The CPU supports AVX-512 F and BF16.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn round_bf16(x: &[f32], out: &mut [MaybeUninit<u16>]) {
    use std::arch::x86_64::*;
    let (blocks, rest) = x.as_chunks::<16>();
    let (out_blocks, out_rest) = out.as_chunks_mut::<16>();
    for (src, dst) in blocks.iter().zip(out_blocks) {
        // SAFETY: 16 floats in, 16 halves (32 bytes) out, unaligned loads and stores.
        unsafe {
            let v = _mm512_cvtneps_pbh(_mm512_loadu_ps(src.as_ptr()));
            _mm256_storeu_si256(
                dst.as_mut_ptr().cast(),
                std::mem::transmute::<__m256bh, __m256i>(v),
            );
        }
    }
    for (src, dst) in rest.iter().zip(out_rest) {
        dst.write(half::bf16::from_f32(*src).to_bits());
    }
}

/// One tile: `R` rows of `a` (row-major bfloat16, `2 * pairs` a row) by one packed panel,
/// plus the panel's bias, stored at `dst` (row stride `stride` floats). With `FETCH`, each step
/// also asks for the panel's weights [`FETCH_AHEAD`] pairs ahead.
///
/// # Safety
/// The CPU supports AVX-512 F and BF16; `a` holds `R` rows; `b` is one panel of `pairs`
/// pairs; `bias` holds 64 floats; `dst` points at `R` rows of at least 64 writable floats.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn tile<const R: usize, const FETCH: bool>(
    a: &[u16],
    pairs: usize,
    b: &[u16],
    bias: &[f32],
    dst: *mut f32,
    stride: usize,
) {
    use std::arch::x86_64::*;
    debug_assert!(a.len() >= R * pairs * 2 && b.len() >= pairs * PANEL * 2 && bias.len() >= PANEL);
    let mut sums = [[_mm512_setzero_ps(); 4]; R];
    let a = a.as_ptr().cast::<i32>();
    let b = b.as_ptr();
    for p in 0..pairs {
        // SAFETY: pair `p` of the panel is 128 halves at `b + p * 128`; pair `p` of row `r` is
        // the 32 bits at `a + r * pairs + p` (both within the bounds asserted above); the fetch
        // reads pair `p + FETCH_AHEAD`, inside the panel by its check.
        unsafe {
            let at = b.add(p * PANEL * 2);
            if FETCH && p + FETCH_AHEAD < pairs {
                let ahead = at.add(FETCH_AHEAD * PANEL * 2).cast::<i8>();
                for line in [0, 64, 128, 192] {
                    _mm_prefetch::<_MM_HINT_T0>(ahead.add(line));
                }
            }
            let w = [
                _mm512_loadu_si512(at.cast()),
                _mm512_loadu_si512(at.add(32).cast()),
                _mm512_loadu_si512(at.add(64).cast()),
                _mm512_loadu_si512(at.add(96).cast()),
            ];
            for (r, row) in sums.iter_mut().enumerate() {
                let x = _mm512_set1_epi32(a.add(r * pairs + p).read_unaligned());
                let x = std::mem::transmute::<__m512i, __m512bh>(x);
                for (sum, w) in row.iter_mut().zip(w) {
                    *sum = _mm512_dpbf16_ps(*sum, x, std::mem::transmute::<__m512i, __m512bh>(w));
                }
            }
        }
    }
    for (r, row) in sums.iter().enumerate() {
        for (j, sum) in row.iter().enumerate() {
            // SAFETY: see the function's contract.
            unsafe {
                let v = _mm512_add_ps(*sum, _mm512_loadu_ps(bias.as_ptr().add(j * 16)));
                _mm512_storeu_ps(dst.add(r * stride + j * 16), v);
            }
        }
    }
}

/// The AMX kernel: tile configuration and one panel of 32 rows.
#[cfg(target_arch = "x86_64")]
mod amx {
    use std::arch::asm;
    use std::mem::MaybeUninit;

    use super::{AMX_DEPTH as DEPTH, AMX_ROWS as ROWS};

    /// Asks Linux for the AMX tile data state (XFEATURE_XTILEDATA, 18) for this process.
    #[cfg(target_os = "linux")]
    pub fn request_tile_state() -> bool {
        const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_long = 18;
        // SAFETY: a plain system call with integer arguments; it changes what the kernel lets
        // this process use and touches no memory of ours.
        unsafe {
            libc::syscall(
                libc::SYS_arch_prctl,
                ARCH_REQ_XCOMP_PERM,
                XFEATURE_XTILEDATA,
            ) == 0
        }
    }

    /// A tile configuration (palette 1), 64 bytes: each tile's bytes a row (`colsb`) and rows.
    #[repr(C, align(64))]
    struct Config([u8; 64]);

    /// The configuration for a task of `rows` rows (1 to 32), at index `rows - 1`: tiles 0-3
    /// hold 16 x 16 `f32` sums (0-1 the first 16 rows, 2-3 the rest), 4-5 the same two slices
    /// of `x` (32 bfloat16 a row), 6-7 two 16-column slices of a panel (16 pairs a row, one
    /// pair per column). The tiles of `x` and of the sums have only the task's rows, so a short
    /// task (a query of a dozen tokens, the last rows of a pass) multiplies no padding; with 16
    /// rows or fewer, tiles 2, 3 and 5 are left unconfigured and unused.
    static CONFIGS: [Config; ROWS] = {
        let mut configs = [const { Config([0; 64]) }; ROWS];
        let mut index = 0;
        while index < ROWS {
            let rows = index + 1;
            let first = if rows < 16 { rows } else { 16 };
            let second = rows - first;
            let tile_rows = [first, first, second, second, first, second, 16, 16];
            let bytes = &mut configs[index].0;
            bytes[0] = 1;
            let mut tile = 0;
            while tile < 8 {
                if tile_rows[tile] > 0 {
                    bytes[16 + 2 * tile] = 64;
                    bytes[48 + tile] = tile_rows[tile] as u8;
                }
                tile += 1;
            }
            index += 1;
        }
        configs
    };

    /// `a` (`rows` rows of `inputs` bfloat16, 1 to 32 rows) times one packed panel `b`
    /// (`inputs / 2` pair-rows of 64 columns) into the first `rows` rows of `sums` (32 rows of
    /// 64 `f32`, row-major), without the bias. The other rows of `sums` are left as they were.
    ///
    /// # Safety
    /// The CPU has AMX-TILE and AMX-BF16 and the process was granted the tile state
    /// ([`super::amx_supported`]); `inputs` is a non-zero multiple of [`DEPTH`]; `rows` is 1 to
    /// 32; `a` holds `rows * inputs` halves and `b` `inputs * 64`.
    pub unsafe fn panel(
        a: &[u16],
        rows: usize,
        inputs: usize,
        b: &[u16],
        sums: &mut MaybeUninit<[f32; ROWS * 64]>,
    ) {
        debug_assert!(inputs > 0 && inputs.is_multiple_of(DEPTH));
        debug_assert!((1..=ROWS).contains(&rows));
        debug_assert!(a.len() >= rows * inputs && b.len() >= inputs * 64);
        let a_stride = inputs * 2;
        let b_stride: usize = 64 * 4;
        let sums_stride: usize = 64 * 4;
        let steps = inputs / DEPTH;
        // SAFETY: the caller's guarantees. Every load reads the configured rows of 64 bytes
        // inside `a` or `b` (rows `0..16` and `16..rows` of `a` at columns `32 s..32 s + 32`;
        // pair-rows `16 s..16 s + 16` of `b` at byte offsets `half * 128` and `+ 64` of a
        // 256-byte row), every store writes the configured rows of 64 bytes inside `sums`. Tiles
        // 2, 3 and 5 are used only where `rows > 16` configured them. No Rust code uses the tile
        // registers, and each block zeroes its sums before use.
        unsafe {
            let config = &CONFIGS[rows - 1];
            asm!("ldtilecfg [{}]", in(reg) config.0.as_ptr(), options(nostack, readonly));
            for half in 0..2 {
                let a0 = a.as_ptr().cast::<u8>();
                let b0 = b.as_ptr().cast::<u8>().add(half * 128);
                let c0 = sums.as_mut_ptr().cast::<u8>().add(half * 128);
                if rows <= 16 {
                    asm!(
                        "tilezero tmm0",
                        "tilezero tmm1",
                        "2:",
                        "tileloadd tmm4, [{a0} + {a_stride} * 1]",
                        "tileloadd tmm6, [{b0} + {b_stride} * 1]",
                        "tileloadd tmm7, [{b0} + {b_stride} * 1 + 64]",
                        "tdpbf16ps tmm0, tmm4, tmm6",
                        "tdpbf16ps tmm1, tmm4, tmm7",
                        "add {a0}, 64",
                        "add {b0}, {b_step}",
                        "dec {steps}",
                        "jnz 2b",
                        "tilestored [{c0} + {c_stride} * 1], tmm0",
                        "tilestored [{c0} + {c_stride} * 1 + 64], tmm1",
                        a0 = inout(reg) a0 => _,
                        b0 = inout(reg) b0 => _,
                        steps = inout(reg) steps => _,
                        a_stride = in(reg) a_stride,
                        b_stride = in(reg) b_stride,
                        b_step = in(reg) 16 * b_stride,
                        c0 = in(reg) c0,
                        c_stride = in(reg) sums_stride,
                        options(nostack),
                    );
                    continue;
                }
                let a1 = a0.add(16 * a_stride);
                let c1 = c0.add(16 * sums_stride);
                asm!(
                    "tilezero tmm0",
                    "tilezero tmm1",
                    "tilezero tmm2",
                    "tilezero tmm3",
                    "2:",
                    "tileloadd tmm4, [{a0} + {a_stride} * 1]",
                    "tileloadd tmm5, [{a1} + {a_stride} * 1]",
                    "tileloadd tmm6, [{b0} + {b_stride} * 1]",
                    "tileloadd tmm7, [{b0} + {b_stride} * 1 + 64]",
                    "tdpbf16ps tmm0, tmm4, tmm6",
                    "tdpbf16ps tmm1, tmm4, tmm7",
                    "tdpbf16ps tmm2, tmm5, tmm6",
                    "tdpbf16ps tmm3, tmm5, tmm7",
                    "add {a0}, 64",
                    "add {a1}, 64",
                    "add {b0}, {b_step}",
                    "dec {steps}",
                    "jnz 2b",
                    "tilestored [{c0} + {c_stride} * 1], tmm0",
                    "tilestored [{c0} + {c_stride} * 1 + 64], tmm1",
                    "tilestored [{c1} + {c_stride} * 1], tmm2",
                    "tilestored [{c1} + {c_stride} * 1 + 64], tmm3",
                    a0 = inout(reg) a0 => _,
                    a1 = inout(reg) a1 => _,
                    b0 = inout(reg) b0 => _,
                    steps = inout(reg) steps => _,
                    a_stride = in(reg) a_stride,
                    b_stride = in(reg) b_stride,
                    b_step = in(reg) 16 * b_stride,
                    c0 = in(reg) c0,
                    c1 = in(reg) c1,
                    c_stride = in(reg) sums_stride,
                    options(nostack),
                );
            }
            // Released after every task: a thread that kept its tiles configured (loading a
            // configuration, ~140 ns, only when its tasks' row count changed) ran products of 8
            // or 16 rows 1-18 % slower, those of 100 or 512 rows 2-8 % faster (AMX 167).
            asm!("tilerelease", options(nostack, nomem));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::runnable;
    use crate::products::{naive, random, relative_error};
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    #[test]
    fn the_packed_layout_computes_the_product() {
        let mut rng = StdRng::seed_from_u64(3);
        let (inputs, outputs) = (96, 128);
        let w = random(&mut rng, inputs * outputs);
        let bias = random(&mut rng, outputs);
        let packed = PackedDense::pack_layout(&w, inputs, outputs, &bias).expect("fits");
        let x = random(&mut rng, 7 * inputs);
        let error = relative_error(
            &packed.forward_scalar(&x),
            &naive(&x, &w, &bias, inputs, outputs),
        );
        // bfloat16 keeps 8 bits of mantissa: each product is within about 2^-8 of its value.
        assert!(error < 1e-2, "relative error {error}");
    }

    #[test]
    fn shapes_that_do_not_fit_are_refused() {
        let w = vec![0.0f32; 3 * 64];
        assert!(PackedDense::pack_layout(&w, 3, 64, &[0.0; 64]).is_none());
        let w = vec![0.0f32; 2 * 60];
        assert!(PackedDense::pack_layout(&w, 2, 60, &[0.0; 60]).is_none());
        let w = vec![0.0f32; 2 * 64];
        assert!(PackedDense::pack_layout(&w, 2, 64, &[0.0; 63]).is_none());
        assert!(PackedDense::pack_layout(&w[1..], 2, 64, &[0.0; 64]).is_none());
        assert!(PackedDense::pack_layout(&w, 2, 64, &[0.0; 64]).is_some());
    }

    /// Each variant this CPU runs against the scalar reading of the same packed weights and
    /// against the `f32` product: every AVX-512 tile height (1 to 6 rows), row counts around
    /// AMX's 16-row tiles and 32-row tasks and over more than one chunk of rows, inputs of one
    /// and of many tile steps, several panels; and AMX against AVX-512 where both run.
    #[test]
    fn each_variant_matches_the_scalar_product() {
        let mut rng = StdRng::seed_from_u64(4);
        for (inputs, outputs) in [(32, 64), (384, 192), (1536, 128)] {
            let w = random(&mut rng, inputs * outputs);
            let bias = random(&mut rng, outputs);
            let mut by_variant = Vec::new();
            for isa in runnable(&VARIANTS) {
                let packed = PackedDense::pack_with(isa, &w, inputs, outputs, &bias)
                    .unwrap_or_else(|| panic!("{} runs here and the shape fits", isa.name()));
                assert_eq!(packed.unit(), isa);
                assert_eq!((packed.inputs(), packed.outputs()), (inputs, outputs));
                by_variant.push(packed);
            }
            let rows = [
                1, 2, 3, 4, 5, 6, 7, 13, 15, 16, 17, 31, 32, 33, 48, 49, 64, 100, 300,
            ];
            for rows in rows {
                let x = random(&mut rng, rows * inputs);
                let reference = naive(&x, &w, &bias, inputs, outputs);
                let mut outputs_by_variant = Vec::new();
                for packed in &by_variant {
                    let name = packed.unit().name();
                    let got = packed.forward(&x).expect("whole rows");
                    assert_eq!(got.len(), rows * outputs);
                    // The same bfloat16 inputs, summed in another order.
                    let error = relative_error(&got, &packed.forward_scalar(&x));
                    assert!(
                        error < 1e-5,
                        "{name}, {inputs}x{outputs}, rows {rows}: {error}"
                    );
                    let error = relative_error(&got, &reference);
                    assert!(
                        error < 1e-2,
                        "{name}, {inputs}x{outputs}, rows {rows}: {error} against f32"
                    );
                    outputs_by_variant.push(got);
                }
                if let [avx, amx] = &outputs_by_variant[..] {
                    let error = relative_error(amx, avx);
                    assert!(error < 1e-5, "{inputs}x{outputs}, rows {rows}: AMX {error}");
                }
            }
            for packed in &by_variant {
                assert!(packed.forward(&[1.0; 5]).is_none());
                assert_eq!(packed.forward(&[]).map(|v| v.len()), Some(0));
            }
        }
    }

    /// `pack` takes the best variant that runs here and fits; `pack_with` refuses a variant the
    /// CPU cannot run, AMX for inputs that are not whole tile steps, and non-bfloat16 sets.
    #[test]
    fn pack_chooses_a_variant_this_cpu_runs() {
        let (w, bias) = (vec![0.5f32; 48 * 64], vec![0.0f32; 64]);
        let w32 = vec![0.5f32; 64 * 64];
        for isa in VARIANTS {
            assert_eq!(
                PackedDense::pack_with(isa, &w32, 64, 64, &bias).is_some(),
                isa.available(),
                "{}",
                isa.name()
            );
        }
        assert!(PackedDense::pack_with(Isa::Amx, &w, 48, 64, &bias).is_none());
        assert!(PackedDense::pack_with(Isa::Avx512, &w32, 64, 64, &bias).is_none());
        assert!(PackedDense::pack_with(Isa::Baseline, &w32, 64, 64, &bias).is_none());
        let best = |inputs| {
            if amx_supported() && inputs % 32 == 0 {
                Isa::Amx
            } else {
                Isa::Avx512Bf16
            }
        };
        match PackedDense::pack(&w, 48, 64, &bias) {
            Some(packed) => assert_eq!(packed.unit(), best(48)),
            None => assert!(!supported()),
        }
        match PackedDense::pack(&w32, 64, 64, &bias) {
            Some(packed) => assert_eq!(packed.unit(), best(64)),
            None => assert!(!supported()),
        }
    }
}

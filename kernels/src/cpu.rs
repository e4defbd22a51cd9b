//! The instruction sets the kernels are compiled for, and which of them this CPU runs.
//! Tests pick each variant by name; `MEMVAULT_REQUIRE_CPU_FEATURES` makes a skipped one fail.

/// An instruction set a kernel has a variant for. Every kernel has a `Baseline` variant (plain
/// loops, compiled for the workspace's target); the others run only where [`Isa::available`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Isa {
    /// The build's target (SSE2 on x86-64): plain loops.
    Baseline,
    /// AVX2 with FMA (and F16C, for half-precision loads).
    Avx2,
    /// AVX-512 F.
    Avx512,
    /// AVX-512 F with BF16 (`vdpbf16ps`).
    Avx512Bf16,
    /// AMX tiles for bfloat16 (AMX-TILE, AMX-BF16, AVX512_BF16 for the rounding), with Linux's
    /// permission to use the tile state.
    Amx,
}

impl Isa {
    pub const ALL: [Isa; 5] = [
        Isa::Baseline,
        Isa::Avx2,
        Isa::Avx512,
        Isa::Avx512Bf16,
        Isa::Amx,
    ];

    /// The name `MEMVAULT_REQUIRE_CPU_FEATURES` uses.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Baseline => "baseline",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Avx512Bf16 => "avx512bf16",
            Isa::Amx => "amx",
        }
    }

    /// Whether this CPU (and, for AMX, the operating system) runs this variant; detected once.
    #[inline]
    pub fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::sync::OnceLock;
            static AVX2: OnceLock<bool> = OnceLock::new();
            static AVX512: OnceLock<bool> = OnceLock::new();
            static BF16: OnceLock<bool> = OnceLock::new();
            match self {
                Isa::Baseline => true,
                Isa::Avx2 => *AVX2.get_or_init(|| {
                    std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("fma")
                        && std::arch::is_x86_feature_detected!("f16c")
                }),
                Isa::Avx512 => {
                    *AVX512.get_or_init(|| std::arch::is_x86_feature_detected!("avx512f"))
                }
                Isa::Avx512Bf16 => *BF16.get_or_init(|| {
                    std::arch::is_x86_feature_detected!("avx512f")
                        && std::arch::is_x86_feature_detected!("avx512bf16")
                }),
                Isa::Amx => crate::bf16::amx_supported(),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Isa::Baseline
        }
    }
}

/// The variable that lists, comma-separated, the [`Isa::name`]s whose tests must run here
/// (CI sets it from `/proc/cpuinfo`): a test that would skip one of them fails instead.
pub const REQUIRE_ENV: &str = "MEMVAULT_REQUIRE_CPU_FEATURES";

/// The instruction sets named in `value` (a [`REQUIRE_ENV`] value); an unknown name is an
/// error, so that a misspelt requirement cannot pass by requiring nothing.
pub fn parse_required(value: &str) -> Result<Vec<Isa>, String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| {
            Isa::ALL
                .into_iter()
                .find(|isa| isa.name().eq_ignore_ascii_case(name))
                .ok_or_else(|| {
                    let known: Vec<&str> = Isa::ALL.iter().map(|isa| isa.name()).collect();
                    format!(
                        "{REQUIRE_ENV}: unknown '{name}' (known: {})",
                        known.join(", ")
                    )
                })
        })
        .collect()
}

/// The instruction sets [`REQUIRE_ENV`] names (none when it is not set), for tests.
pub fn required_from_env() -> Result<Vec<Isa>, String> {
    match std::env::var(REQUIRE_ENV) {
        Ok(value) => parse_required(&value),
        Err(_) => Ok(Vec::new()),
    }
}

/// For tests: the variants of `among` to run here. One this CPU cannot run is skipped with a
/// line on stderr, or, when [`REQUIRE_ENV`] names it, fails the test.
#[cfg(test)]
pub(crate) fn runnable(among: &[Isa]) -> Vec<Isa> {
    let required = required_from_env().unwrap_or_else(|error| panic!("{error}"));
    select(among, &required, Isa::available).unwrap_or_else(|error| panic!("{error}"))
}

/// The variants of `among` that `runs`; an error naming the first required one that does not.
#[cfg(test)]
fn select(among: &[Isa], required: &[Isa], runs: impl Fn(Isa) -> bool) -> Result<Vec<Isa>, String> {
    let mut chosen = Vec::new();
    for &isa in among {
        if runs(isa) {
            chosen.push(isa);
        } else if required.contains(&isa) {
            return Err(format!(
                "{REQUIRE_ENV} requires {} but this CPU or OS does not run it",
                isa.name()
            ));
        } else {
            eprintln!(
                "this CPU or OS does not run {}: its variant is skipped",
                isa.name()
            );
        }
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_names_are_parsed_and_unknown_ones_refused() {
        assert_eq!(
            parse_required(" avx2, AMX ,,avx512bf16"),
            Ok(vec![Isa::Avx2, Isa::Amx, Isa::Avx512Bf16])
        );
        assert_eq!(parse_required(""), Ok(vec![]));
        let error = parse_required("avx2,avx-512").unwrap_err();
        assert!(error.contains("unknown 'avx-512'"), "{error}");
    }

    #[test]
    fn a_required_variant_that_cannot_run_fails_and_others_are_skipped() {
        let among = [Isa::Baseline, Isa::Avx2, Isa::Amx];
        let runs = |isa: Isa| isa != Isa::Amx;
        assert_eq!(
            select(&among, &[], runs),
            Ok(vec![Isa::Baseline, Isa::Avx2])
        );
        assert_eq!(
            select(&among, &[Isa::Avx2], runs),
            Ok(vec![Isa::Baseline, Isa::Avx2])
        );
        let error = select(&among, &[Isa::Avx2, Isa::Amx], runs).unwrap_err();
        assert!(error.contains("requires amx"), "{error}");
    }

    #[test]
    fn the_baseline_always_runs_and_bf16_sets_imply_avx512() {
        assert!(Isa::Baseline.available());
        if Isa::Amx.available() {
            assert!(Isa::Avx512Bf16.available());
        }
        if Isa::Avx512Bf16.available() {
            assert!(Isa::Avx512.available());
        }
    }
}

//! memdex CUDA kernels as embedded PTX (see README.md). Not a default workspace member.

/// PTX text of each `cuda/*.cu`, named after the file (`SCALE` for `scale.cu`); empty strings
/// when built without nvcc (`AVAILABLE == false`).
pub mod ptx {
    include!(concat!(env!("OUT_DIR"), "/ptx.rs"));
}

#[cfg(test)]
mod tests {
    #[test]
    fn ptx_present_when_built_with_nvcc() {
        if super::ptx::AVAILABLE {
            assert!(super::ptx::SCALE.contains(".entry memdex_scale_f32"));
        } else {
            assert!(super::ptx::SCALE.is_empty());
        }
    }
}

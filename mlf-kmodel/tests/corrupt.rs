//! The runtime parser on synthetic kmodels (no ../shared needed): the good ones run and give
//! the values worked out by hand; every damaged one is refused with the specific error.

use mlf_fixtures::kmodel_synth::{corrupt_cases, qconv_params, v3_conv, v3_fc, v4_conv, v4_cpu, v4_qconv, words};
use mlf_kmodel::{self as kmodel, ActivationRounding, Memory, Model, Options, Plan};

/// Parses and runs a model with the memories it asks for; returns output 0's bytes.
fn run(bytes: &[u8], input: &[u8]) -> Vec<u8> {
    let m = Model::parse(bytes).unwrap();
    let req = m.requirements();
    let mut main = vec![0u64; (req.main as usize).div_ceil(8)];
    let mut kpu = vec![0u8; req.kpu as usize];
    let mut scratch = vec![0u8; req.scratch as usize];
    let mut plan: Plan<'_, 4> = Plan::new();
    let main_b: &mut [u8] = bytemuck::cast_slice_mut(&mut main);
    plan.run(
        bytes,
        Memory { main: main_b, kpu: &mut kpu, scratch: &mut scratch },
        input,
        Options { rounding: ActivationRounding::NncaseV02 },
    )
    .unwrap();
    plan.output(bytemuck::cast_slice(&main), &kpu, 0).unwrap().to_vec()
}

/// [`run`] for a model with an f32 output.
fn run_f32(bytes: &[u8], input: &[u8]) -> Vec<f32> {
    mlf_fixtures::from_le(&run(bytes, input))
}

#[test]
fn synthetic_conv_models_compute_the_expected_values() {
    let input: Vec<u8> = (0..16u8).map(|i| i * 17).collect();
    // channel c (weight c + 1): 0.5 · clamp(x · (c + 1), 0, 255)
    let want: Vec<f32> =
        (0..2).flat_map(|c| input.iter().map(move |&x| 0.5 * ((x as u32 * (c + 1)).min(255) as f32))).collect();
    assert_eq!(run_f32(&v3_conv(), &input), want, "V3");
    assert_eq!(run_f32(&v4_conv().0, &input), want, "V4");
}

#[test]
fn synthetic_fc_model_computes_the_expected_values() {
    let x = [1.0f32, -2.0, 3.0, 0.5];
    let h: Vec<f32> = (0..3)
        .map(|o| (0..4).fold(0f32, |s, i| s + x[i] * ((o + 1) as f32 * (i + 1) as f32 / 10.0)) + 0.5)
        .map(|v: f32| v.max(0.0))
        .collect();
    let y: Vec<f32> = (0..2).map(|o| (0..3).fold(0f32, |s, i| s + h[i] * (o as f32 - i as f32)) + 0.5).collect();
    let input: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(run_f32(&v3_fc(), &input), y);
}

#[test]
fn synthetic_quantized_conv_matches_a_direct_reference() {
    let q = qconv_params();
    let input: Vec<u8> = (0..16u32).map(|i| (i * 37 % 256) as u8).collect();
    // Out-of-image taps contribute nothing; requantise with a rounded shift, clamp to u8.
    let mut want = Vec::new();
    for oc in 0..2 {
        for oy in 0..4i32 {
            for ox in 0..4i32 {
                let mut acc = q.bias[oc] as i64;
                for ky in 0..3i32 {
                    for kx in 0..3i32 {
                        let (iy, ix) = (oy + ky - 1, ox + kx - 1);
                        if (0..4).contains(&iy) && (0..4).contains(&ix) {
                            let x = input[(iy * 4 + ix) as usize] as i64 + q.input_offset as i64;
                            let w = q.weights[oc][(ky * 3 + kx) as usize] as i64 + q.filter_offset as i64;
                            acc += x * w;
                        }
                    }
                }
                let r = ((acc * q.mul as i64 + (1 << (q.shift - 1))) >> q.shift) + q.offset as i64;
                want.push(r.clamp(0, 255) as u8);
            }
        }
    }
    assert!(want.contains(&0) && want.contains(&255), "the case exercises both clamps");
    assert!(want.iter().any(|&v| v != 0 && v != 255));
    assert_eq!(run(&v4_qconv(), &input), want);
}

#[test]
fn the_last_body_may_miss_its_padding_and_trailing_data_is_ignored() {
    let v3 = v3_conv();
    let m = Model::parse(&v3).unwrap();
    assert_eq!(m.len(), v3.len());
    let mut longer = v3.clone();
    longer.extend([0xFF; 1000]);
    longer.extend(v3_conv()); // a second model after the first is not read
    assert_eq!(Model::parse(&longer).unwrap().len(), v3.len());
    // Declare 4 bytes of final padding that the file does not have (as real files do).
    let (mut v4, l4) = v4_conv();
    let size = u32::from_le_bytes(v4[l4.headers + 12..l4.headers + 16].try_into().unwrap());
    v4[l4.headers + 12..l4.headers + 16].copy_from_slice(&(size + 4).to_le_bytes());
    assert_eq!(Model::parse(&v4).unwrap().len(), v4.len());
    // More than 7 missing bytes is damage.
    v4[l4.headers + 12..l4.headers + 16].copy_from_slice(&(size + 8).to_le_bytes());
    assert!(Model::parse(&v4).is_err());
}

#[test]
fn every_damaged_model_is_refused_with_its_error() {
    let cases = corrupt_cases();
    assert!(cases.len() >= 20);
    for c in &cases {
        match Model::parse(&c.bytes) {
            Ok(_) => panic!("{}: parsed", c.name),
            Err(e) => {
                assert!((c.expect)(&e), "{}: unexpected error {e:?} ({e})", c.name);
                eprintln!("{:<45} -> {e}", c.name);
            }
        }
    }
}

#[test]
fn every_truncation_of_a_good_model_is_an_error_not_a_panic() {
    for bytes in [v3_conv(), v4_conv().0, v3_fc(), v4_qconv()] {
        for n in 0..bytes.len() - 4 {
            assert!(Model::parse(&bytes[..n]).is_err(), "prefix {n} of {} parsed", bytes.len());
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "thousands of parses and runs: too slow under Miri")]
fn single_byte_damage_never_panics() {
    // Every byte of each model set to a few values: parsing (and running, when it parses)
    // returns, whatever it returns.
    for bytes in [v3_conv(), v4_conv().0, v3_fc(), v4_qconv()] {
        for i in 0..bytes.len() {
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut b = bytes.clone();
                b[i] = v;
                if let Ok(m) = Model::parse(&b) {
                    let req = m.requirements();
                    if req.kpu > 1 << 21 || req.main > 1 << 20 || req.scratch > 1 << 20 {
                        continue;
                    }
                    let mut main = vec![0u8; req.main as usize];
                    let mut kpu = vec![0u8; req.kpu as usize];
                    let mut scratch = vec![0u8; req.scratch as usize + 8];
                    let mut steps = vec![kmodel::Step::Empty; m.steps()];
                    m.decode_into(&mut steps).unwrap();
                    let input = vec![7u8; m.input().bytes as usize];
                    let _ = kmodel::run(
                        &m,
                        &steps,
                        Memory { main: &mut main, kpu: &mut kpu, scratch: &mut scratch },
                        &input,
                        Options::default(),
                    );
                }
            }
        }
    }
}

#[test]
fn strided_slice_with_a_huge_stride_reads_one_element() {
    // u8 1×1×1×4 → the element at 2 (begin 2, end 3, stride i32::MAX): the next index,
    // 2 + i32::MAX, is past the end and must not be computed in i32.
    let slice = words(&[1, 1, 0, 4, 1, 1, 4, 1, 1, 1, 1, 4, 0, 0, 0, 2, 1, 1, 1, 3, 1, 1, 1, i32::MAX]);
    let bytes = v4_cpu(8, &[], [1, 1, 0, 4], [1, 1, 1, 4], [1, 1, 4, 1], &[(0x0D, slice)]);
    assert_eq!(run(&bytes, &[10, 11, 12, 13]), [12]);
    // Backwards: begin 3, end -1, stride -2 reads 3 and 1.
    let slice = words(&[1, 1, 0, 4, 1, 1, 4, 2, 1, 1, 1, 4, 0, 0, 0, 3, 1, 1, 1, -1, 1, 1, 1, -2]);
    let bytes = v4_cpu(8, &[], [1, 1, 0, 4], [1, 1, 1, 4], [1, 1, 4, 2], &[(0x0D, slice)]);
    assert_eq!(run(&bytes, &[10, 11, 12, 13]), [13, 11]);
}

#[test]
fn zero_byte_copies_to_the_constants_pool_write_nothing() {
    // Output ranges of size 0 may name the constants pool; a copy of 0 bytes to const 8 must
    // not index main memory or KPU RAM (4 and 0 bytes here) at 8.
    let input = [1, 1, 0, 4];
    let copy = words(&[1, 1, 0, 2, 0, 1, 8, 0]); // memory_copy: 2 bytes → 0 whole floats
    let concat = words(&[0, 1, 8, 0, 1, 1, 1, 1, 1, 0, 0, 0]); // concat of one empty input
    for (op, body) in [(0x01, concat), (0x09, copy)] {
        let bytes = v4_cpu(4, &[0; 16], input, [1, 1, 1, 4], input, &[(op, body)]);
        assert_eq!(run(&bytes, &[1, 2, 3, 4]), [1, 2, 3, 4], "opcode {op:#x}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "tensors of 2^20 and more elements: too slow under Miri")]
fn conv2d_transpose_with_a_tall_input_and_a_large_stride_runs() {
    // f32 1×1×2^20×1 → 1×1×1×1, 1×1 filter of 1.0, stride (4096, 1): only row 0 lands in the
    // output; row · stride reaches 2^32 and must not be computed in i32.
    let h = 1 << 20;
    let bits = |v: f32| v.to_bits() as i32;
    let mut body = vec![1, 0, 0, 4 * h, 1, 0, 4 * h, 4, 1, 1, h, 1, 1, 1, 1, 1, 1];
    body.extend([0, 0, 0, 0, 1, 1, 4096, 1, 1, 1, bits(-1e30), bits(1e30), bits(1.0), 0]); // window, clamp, weight, bias
    let bytes = v4_cpu(
        4 * h as u32 + 4,
        &[],
        [1, 0, 0, 4 * h as u32],
        [1, 1, h as u32, 1],
        [1, 0, 4 * h as u32, 4],
        &[(0x13, words(&body))],
    );
    let mut input = vec![1f32; h as usize];
    input[0] = 3.5;
    assert_eq!(run(&bytes, kmodel::f32_bytes(&input)), 3.5f32.to_le_bytes());
}

#[test]
#[cfg_attr(miri, ignore = "tensors of 2^20 and more elements: too slow under Miri")]
fn bilinear_resize_to_a_very_tall_output_stays_inside_its_input() {
    // u8 1×1×1×1 at the end of main memory → 1×1×(2^24 − 1)×1: in f32, (out_h − 1) · (1 / out_h)
    // rounds to 1.0, one row past the input.
    let n = (1 << 24) - 1;
    let mut body = words(&[1, 1, n, 1, 1, 1, 0, n, 1, 1, 1, 1, n, 1, 0]);
    body.push(0); // align_corners
    let bytes = v4_cpu(n as u32 + 1, &[], [1, 1, n as u32, 1], [1, 1, 1, 1], [1, 1, 0, n as u32], &[(0x0A, body)]);
    assert!(run(&bytes, &[9]).iter().all(|&v| v == 9));
}

/// NHWC input 1×5×4×3, 3×2 window, stride (2, 1), dilation (1, 2), padding h (1, 1), w (1, 0):
/// a 1×3×3×oc output. Words of the window part of a CPU convolution body.
const CPU_WIN: [i32; 10] = [1, 1, 1, 0, 3, 2, 2, 1, 1, 2];
const CPU_SHAPE: [u32; 4] = [1, 5, 4, 3];

/// nncase's CPU convolution order: for each output pixel and channel, bias, then the taps by
/// ky, kx and input channel; `acc(v, input index, weight index)` folds one tap.
fn cpu_conv_ref<V: Copy>(
    depthwise: bool,
    oc: usize,
    bias: impl Fn(usize) -> V,
    acc: impl Fn(V, usize, usize) -> V,
) -> Vec<V> {
    let (h, w, c) = (5i64, 4i64, 3usize);
    let mut out = Vec::new();
    for oy in 0..3i64 {
        for ox in 0..3i64 {
            for o in 0..oc {
                let mut v = bias(o);
                for ky in 0..3i64 {
                    for kx in 0..2i64 {
                        let (iy, ix) = (oy * 2 - 1 + ky, ox - 1 + 2 * kx);
                        if !(0..h).contains(&iy) || !(0..w).contains(&ix) {
                            continue;
                        }
                        let pix = (iy * w + ix) as usize * c;
                        let k = (ky * 2 + kx) as usize;
                        if depthwise {
                            v = acc(v, pix + o, o * 6 + k);
                        } else {
                            for ic in 0..c {
                                v = acc(v, pix + ic, (o * 6 + k) * c + ic);
                            }
                        }
                    }
                }
                out.push(v);
            }
        }
    }
    out
}

#[test]
fn cpu_convolutions_follow_nncase_tap_order() {
    let x: Vec<f32> = (0..60).map(|i| (i as f32 * 0.37).sin() * 3.1).collect();
    let bits = |v: f32| v.to_bits() as i32;
    for depthwise in [false, true] {
        let oc = if depthwise { 3 } else { 2 };
        let wn = if depthwise { oc * 6 } else { oc * 6 * 3 };
        let w: Vec<f32> = (0..wn).map(|i| (i as f32 * 0.71).cos() / 3.0).collect();
        let b: Vec<f32> = (0..oc).map(|i| i as f32 * 0.25 - 0.1).collect();
        let mut body = vec![1, 0, 0, 240, 1, 0, 240, 36 * oc as i32, 1, 5, 4, 3];
        if !depthwise {
            body.push(oc as i32);
        }
        body.extend(CPU_WIN);
        body.extend([bits(-2.0), bits(2.5)]);
        body.extend(w.iter().chain(&b).map(|&v| bits(v)));
        let op = if depthwise { 0x1002 } else { 0x1001 };
        let out = [1, 0, 240, 36 * oc as u32];
        let bytes = v4_cpu(240 + 36 * oc as u32, &[], [1, 0, 0, 240], CPU_SHAPE, out, &[(op, words(&body))]);
        let want = cpu_conv_ref(depthwise, oc, |o| b[o], |v, i, k| v + x[i] * w[k]);
        let want: Vec<u8> = want.iter().flat_map(|v| v.clamp(-2.0, 2.5).to_le_bytes()).collect();
        assert_eq!(run(&bytes, kmodel::f32_bytes(&x)), want, "depthwise {depthwise}");
    }
    // Quantized: offsets are subtracted; requantisation rounds half up.
    let x: Vec<u8> = (0..60).map(|i| (i * 53 % 256) as u8).collect();
    let (in_off, f_off, mul, shift, offset) = (120, 7, 3, 6, 100);
    for depthwise in [false, true] {
        let oc = if depthwise { 3 } else { 2 };
        let wn = if depthwise { oc * 6 } else { oc * 6 * 3 };
        let w: Vec<u8> = (0..wn).map(|i| (i * 29 % 17) as u8).collect();
        let b: Vec<i32> = (0..oc as i32).map(|i| 300 * i - 200).collect();
        let mut body = vec![1, 1, 0, 60, 1, 1, 60, 9 * oc as i32, 1, 5, 4, 3];
        if !depthwise {
            body.push(oc as i32);
        }
        body.extend(CPU_WIN);
        body.extend([in_off, f_off, mul, shift, offset]);
        let mut body = words(&body);
        body.extend(&w);
        body.extend(words(&b));
        let op = if depthwise { 0x1005 } else { 0x1004 };
        let out = [1, 1, 60, 9 * oc as u32];
        let bytes = v4_cpu(60 + 9 * oc as u32, &[], [1, 1, 0, 60], CPU_SHAPE, out, &[(op, body)]);
        let acc = |v: i64, i: usize, k: usize| v + (x[i] as i64 - in_off as i64) * (w[k] as i64 - f_off as i64);
        let want = cpu_conv_ref(depthwise, oc, |o| b[o] as i64, acc);
        let want: Vec<u8> = want
            .iter()
            .map(|&v| (((v * mul as i64 + (1 << (shift - 1))) >> shift) + offset as i64).clamp(0, 255) as u8)
            .collect();
        assert!(want.iter().any(|&v| v != 0 && v != 255), "depthwise {depthwise}: {want:?}");
        assert_eq!(run(&bytes, &x), want, "quantized, depthwise {depthwise}");
    }
}

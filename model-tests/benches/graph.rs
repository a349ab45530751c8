//! Graph-executor models: time per inference and static RAM, mlf against a peer measured in the
//! same run.
//!
//! The peer is what TVM's own graph executors do (the CRT and C++ executors, and the removed
//! `tvm-graph-rt` crate): at start-up parse the graph JSON, allocate one heap buffer per storage
//! id, copy every parameter into RAM and resolve kernels by name; per inference copy the input
//! in and call the kernels. Both call the very same compiled kernels, so the difference is the
//! executor. Run with `cargo bench -p model-tests --bench graph`; figures are printed and
//! written to `target/bench-graph.json`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mlf_build::__private::model::NodeOp;
use mlf_build::__private::model::{ArgBinding, Executor};
use mlf_runtime::tvm::ffi::{DLDataType, DLDevice, DLTensor, PackedFn, TVMValue};

/// TVM-style executor over the kernels of one generated module.
struct Peer {
    buffers: Vec<Vec<u128>>,
    tensors: Vec<DLTensor>,
    shapes: Vec<Vec<i64>>,
    calls: Vec<(PackedFn, Vec<usize>)>,
    input_eids: Vec<usize>,
    output_eids: Vec<usize>,
    workspace: Vec<u128>,
    heap_bytes: usize,
}

impl Peer {
    fn start(model: &Path, kernels: &[(&str, PackedFn)]) -> Peer {
        let desc = mlf_build::open(model).unwrap();
        let Executor::Graph(g) = &desc.executor else { unreachable!() };
        let graph = &g.graph;
        let n_sids = graph.storage_id.iter().max().map_or(0, |m| m + 1);
        let mut sid_bytes = vec![0usize; n_sids];
        for e in 0..graph.num_entries() {
            let s = graph.storage_id[e];
            sid_bytes[s] = sid_bytes[s].max(graph.entry_bytes(e) as usize);
        }
        let mut buffers: Vec<Vec<u128>> = sid_bytes.iter().map(|&b| vec![0u128; b.div_ceil(16)]).collect();
        // Copy every parameter into its storage (what TVM's LoadParams does).
        for (nid, b) in &g.bindings {
            if let ArgBinding::Param(i) = b {
                let eid = graph.node_row_ptr[*nid];
                let dst = &mut buffers[graph.storage_id[eid]];
                let bytes: &mut [u8] = unsafe_bytes(dst);
                let src = &desc.params[*i].data;
                bytes[..src.len()].copy_from_slice(src);
            }
        }
        let shapes: Vec<Vec<i64>> = graph.shape.iter().map(|s| s.iter().map(|&d| d as i64).collect()).collect();
        let mut tensors = Vec::new();
        for e in 0..graph.num_entries() {
            let d = graph.dltype[e];
            tensors.push(DLTensor {
                data: buffers[graph.storage_id[e]].as_mut_ptr().cast(),
                device: DLDevice::CPU,
                ndim: shapes[e].len() as i32,
                dtype: DLDataType { code: d.code.code(), bits: d.bits, lanes: d.lanes },
                shape: shapes[e].as_ptr().cast_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            });
        }
        let by_name: HashMap<&str, PackedFn> = kernels.iter().copied().collect();
        let mut calls = Vec::new();
        for (nid, node) in graph.nodes.iter().enumerate() {
            if let NodeOp::Call { func_name, .. } = &node.op {
                let first = graph.node_row_ptr[nid];
                let mut args: Vec<usize> = node.inputs.iter().map(|r| graph.eid(*r)).collect();
                args.extend(first..first + node.num_outputs);
                calls.push((by_name[func_name.as_str()], args));
            }
        }
        let input_eids = graph
            .arg_nodes
            .iter()
            .filter(|n| matches!(g.bindings[n], ArgBinding::Input(_)))
            .map(|&n| graph.node_row_ptr[n])
            .collect();
        let output_eids = graph.heads.iter().map(|h| graph.eid(*h)).collect();
        // TVM sizes its workspace pool to the largest operator workspace.
        let ws = desc.memory.operator_workspace.iter().map(|(_, b)| *b as usize).max().unwrap_or(0).div_ceil(16) * 16;
        let heap_bytes = sid_bytes.iter().sum::<usize>() + ws;
        Peer { buffers, tensors, shapes, calls, input_eids, output_eids, workspace: vec![0u128; ws / 16], heap_bytes }
    }

    fn run(&mut self, inputs: &[&[u8]]) -> Vec<u8> {
        for (&e, data) in self.input_eids.iter().zip(inputs) {
            let dst = self.tensors[e].data.cast::<u8>();
            // SAFETY: the input storage holds the input's bytes.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        }
        let ws = unsafe_bytes(&mut self.workspace);
        let _session = mlf_runtime::tvm::workspace::Session::enter(ws, 16).unwrap();
        for (f, args) in &self.calls {
            let mut values: Vec<TVMValue> =
                args.iter().map(|&e| TVMValue { v_handle: (&mut self.tensors[e] as *mut DLTensor).cast() }).collect();
            let mut codes = vec![7i32; args.len()];
            let mut ret = TVMValue { v_int64: 0 };
            let mut ret_code = 0;
            // SAFETY: the same kernels and tensor shapes the generated code uses.
            let rc = unsafe {
                f(
                    values.as_mut_ptr(),
                    codes.as_mut_ptr(),
                    args.len() as i32,
                    &mut ret,
                    &mut ret_code,
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(rc, 0);
        }
        let e = self.output_eids[0];
        let n: i64 = self.shapes[e].iter().product();
        let bytes = n as usize * (self.tensors[e].dtype.bits as usize).div_ceil(8);
        // SAFETY: the output storage holds `bytes` bytes.
        unsafe { std::slice::from_raw_parts(self.tensors[e].data.cast::<u8>(), bytes).to_vec() }
    }
}

/// Input bytes with the alignment every element type needs.
struct AlignedBytes(Vec<u128>, usize);

impl AlignedBytes {
    fn new(n: usize) -> Self {
        let mut v = vec![0u128; n.div_ceil(16)];
        unsafe_bytes(&mut v).fill(1);
        AlignedBytes(v, n)
    }
    fn bytes(&self) -> &[u8] {
        // SAFETY: u128 has no padding; `self.1` bytes are inside the vector.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().cast(), self.1) }
    }
}

fn unsafe_bytes(v: &mut [u128]) -> &mut [u8] {
    // SAFETY: u128 has no padding; the byte view covers exactly the same memory.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len() * 16) }
}

struct Row {
    name: String,
    ours_us: f64,
    peer_us: f64,
    peer_start_us: f64,
    arena: usize,
    peer_heap: usize,
    tvm_plan: usize,
}

macro_rules! bench {
    ($rows:ident, $name:expr, $path:expr, $m:path, [$($inp:ident),*], $first:ident) => {{
        use $m as model;
        let path: PathBuf = $path;
        let desc = mlf_build::open(&path).unwrap();
        // Inputs of the right sizes (all bytes 1; the peer and mlf get the same).
        let inputs_bytes: Vec<AlignedBytes> = desc.inputs.iter().map(|t| AlignedBytes::new(t.bytes() as usize)).collect();
        let names = [$(stringify!($inp)),*];
        let mut net = model::Model::take().unwrap();
        let ours = mlf_fixtures::median_time(Duration::from_millis(300), || {
            let ins = model::Inputs { $($inp: mlf_runtime::view(inputs_bytes[names.iter().position(|n| *n == stringify!($inp)).unwrap()].bytes(), 0)),* };
            std::hint::black_box(net.run(&ins).unwrap());
        });
        let t = Instant::now();
        let mut peer = Peer::start(&path, &model::KERNELS);
        let peer_start = t.elapsed();
        let refs: Vec<&[u8]> = inputs_bytes.iter().map(|v| v.bytes()).collect();
        let peer_time = mlf_fixtures::median_time(Duration::from_millis(300), || {
            std::hint::black_box(peer.run(&refs));
        });
        // Same kernels, same inputs: same first output.
        let ins = model::Inputs { $($inp: mlf_runtime::view(inputs_bytes[names.iter().position(|n| *n == stringify!($inp)).unwrap()].bytes(), 0)),* };
        let ours_out = mlf_runtime::as_bytes(&net.run(&ins).unwrap().$first[..]).to_vec();
        assert_eq!(ours_out, peer.run(&refs), "{}: outputs differ", $name);
        $rows.push(Row {
            name: $name.to_string(),
            ours_us: ours.as_secs_f64() * 1e6,
            peer_us: peer_time.as_secs_f64() * 1e6,
            peer_start_us: peer_start.as_secs_f64() * 1e6,
            arena: model::ARENA_BYTES,
            peer_heap: peer.heap_bytes,
            tvm_plan: model::TVM_PLAN_BYTES,
        });
        let _ = &peer.buffers;
    }};
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut rows: Vec<Row> = Vec::new();
    bench!(
        rows,
        "digits (repository)",
        root.join("examples/digits/model/digits.tar"),
        model_tests::digits,
        [pixels],
        output
    );
    #[cfg(mlf_shared)]
    {
        let fx = |n: &str| {
            let d = root.join("../shared/fixtures/mlf").join(n);
            if d.join("model.tar").exists() { d.join("model.tar") } else { d.join("model") }
        };
        use model_tests::graph as g;
        bench!(
            rows,
            "arduino-demos-kws-yesno-graph-v4",
            fx("arduino-demos-kws-yesno-graph-v4"),
            g::yesno_v4,
            [reshape_1],
            output
        );
        bench!(
            rows,
            "digits-mlp-graph-linked",
            fx("digits-mlp-graph-linked"),
            g::digits_mlp_graph_linked,
            [pixels],
            output
        );
        bench!(
            rows,
            "guberti-tvm-graph-v2-cifar-lp0-syslib",
            fx("guberti-tvm-graph-v2-cifar-lp0-syslib"),
            g::cifar_v2,
            [input_1_int8],
            output
        );
        bench!(rows, "gvsoc-sine-graph-v7", fx("gvsoc-sine-graph-v7"), g::sine_v7, [dense_2_input], identity);
        bench!(rows, "kws-int8-graph", fx("kws-int8-graph"), g::kws_int8_graph, [input_1], identity);
        bench!(rows, "multi-io-graph", fx("multi-io-graph"), g::multi_io_graph, [audio, gain], output0);
        bench!(
            rows,
            "resnet8-int8-graph",
            fx("resnet8-int8-graph"),
            g::resnet8_int8_graph,
            [input_1_int8],
            identity_int8
        );
    }
    #[cfg(not(mlf_shared))]
    eprintln!("../shared/fixtures not found: only the repository's digits model is measured");

    println!(
        "{:<40} {:>11} {:>11} {:>7} {:>12} | {:>9} {:>11} {:>7} {:>11}",
        "model", "mlf µs/inf", "peer µs/inf", "ratio", "peer init µs", "mlf RAM", "peer RAM", "ratio", "TVM plan"
    );
    let mut json = Vec::new();
    for r in &rows {
        println!(
            "{:<40} {:>11.2} {:>11.2} {:>7.2} {:>12.1} | {:>9} {:>11} {:>7.3} {:>11}",
            r.name,
            r.ours_us,
            r.peer_us,
            r.ours_us / r.peer_us,
            r.peer_start_us,
            r.arena,
            r.peer_heap,
            r.arena as f64 / r.peer_heap as f64,
            r.tvm_plan
        );
        assert!(r.arena <= r.tvm_plan, "{}: mlf needs more RAM than TVM's plan", r.name);
        json.push(format!(
            "{{\"model\":{:?},\"mlf_us\":{:.3},\"peer_us\":{:.3},\"peer_init_us\":{:.1},\"mlf_ram\":{},\"peer_ram\":{},\"tvm_plan\":{}}}",
            r.name, r.ours_us, r.peer_us, r.peer_start_us, r.arena, r.peer_heap, r.tvm_plan
        ));
    }
    let out = root.join("target/bench-graph.json");
    let _ = std::fs::write(&out, format!("[{}]\n", json.join(",\n")));
    println!(
        "\n(ratio < 1: mlf is faster / smaller; peer = TVM-style executor: JSON parsed at start-up, heap storage per storage id, parameters copied to RAM, same kernels)\nwritten to {}",
        out.display()
    );
}

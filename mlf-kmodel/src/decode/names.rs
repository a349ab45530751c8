//! Short names of layers and nodes (`k210_conv`, `quantized_add`, …), for profiles and
//! messages: each is the variant's name in snake case.

use super::{Step, v3, v4};

impl Step<'_> {
    /// The step's name: its layer's or node's (`"empty"` for an unfilled step).
    pub fn name(&self) -> &'static str {
        match self {
            Step::Empty => "empty",
            Step::V3(l) => l.name(),
            Step::V4(n) => n.name(),
        }
    }

    /// Whether the step runs on the KPU (a KPU convolution), not the CPU.
    pub fn on_kpu(&self) -> bool {
        matches!(self, Step::V3(v3::Layer::K210Conv { .. }) | Step::V4(v4::Node::KpuConv2d { .. }))
    }
}

impl v3::Layer<'_> {
    /// The layer's name: its variant in snake case (`"k210_conv"`, …).
    pub fn name(&self) -> &'static str {
        match self {
            v3::Layer::Add { .. } => "add",
            v3::Layer::QuantizedAdd { .. } => "quantized_add",
            v3::Layer::GlobalAveragePool2d { .. } => "global_average_pool2d",
            v3::Layer::QuantizedMaxPool2d { .. } => "quantized_max_pool2d",
            v3::Layer::AveragePool2d { .. } => "average_pool2d",
            v3::Layer::Quantize { .. } => "quantize",
            v3::Layer::Dequantize { .. } => "dequantize",
            v3::Layer::Requantize { .. } => "requantize",
            v3::Layer::L2Normalization { .. } => "l2_normalization",
            v3::Layer::Softmax { .. } => "softmax",
            v3::Layer::Concat { .. } => "concat",
            v3::Layer::FullyConnected { .. } => "fully_connected",
            v3::Layer::TfFlatten { .. } => "tf_flatten",
            v3::Layer::ResizeNearest { .. } => "resize_nearest",
            v3::Layer::ChannelwiseDequantize { .. } => "channelwise_dequantize",
            v3::Layer::Logistic { .. } => "logistic",
            v3::Layer::K210Conv { .. } => "k210_conv",
            v3::Layer::K210AddPadding { .. } => "k210_add_padding",
            v3::Layer::K210RemovePadding { .. } => "k210_remove_padding",
            v3::Layer::K210Upload { .. } => "k210_upload",
        }
    }
}

impl v4::Node<'_> {
    /// The node's name: its variant in snake case (`"kpu_conv2d"`, …).
    pub fn name(&self) -> &'static str {
        match self {
            v4::Node::Binary { .. } => "binary",
            v4::Node::QuantizedBinary { .. } => "quantized_binary",
            v4::Node::Concat { .. } => "concat",
            v4::Node::Conv2d { .. } => "conv2d",
            v4::Node::QuantizedConv2d { .. } => "quantized_conv2d",
            v4::Node::Conv2dTranspose { .. } => "conv2d_transpose",
            v4::Node::Dequantize { .. } => "dequantize",
            v4::Node::Quantize { .. } => "quantize",
            v4::Node::MatMul { .. } => "mat_mul",
            v4::Node::QuantizedMatMul { .. } => "quantized_mat_mul",
            v4::Node::MemoryCopy { .. } => "memory_copy",
            v4::Node::Pad { .. } => "pad",
            v4::Node::Reduce { .. } => "reduce",
            v4::Node::ReduceWindow2d { .. } => "reduce_window2d",
            v4::Node::ResizeImage { .. } => "resize_image",
            v4::Node::Softmax { .. } => "softmax",
            v4::Node::Transpose { .. } => "transpose",
            v4::Node::StridedSlice { .. } => "strided_slice",
            v4::Node::Unary { .. } => "unary",
            v4::Node::NnilUnary { .. } => "nnil_unary",
            v4::Node::TableLookup1d { .. } => "table_lookup1d",
            v4::Node::CpuConv2d { .. } => "cpu_conv2d",
            v4::Node::CpuQuantizedConv2d { .. } => "cpu_quantized_conv2d",
            v4::Node::KpuUpload { .. } => "kpu_upload",
            v4::Node::KpuConv2d { .. } => "kpu_conv2d",
        }
    }
}

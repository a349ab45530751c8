//! An AOT model: how its entry point is called, its pools and its workspace.

use serde::Serialize;

/// How an AOT model's entry point is called.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "style", rename_all = "kebab-case")]
pub enum AotCall {
    /// `int32_t run(struct <m>_inputs*, struct <m>_outputs*[, struct <m>_workspace_pools*])`.
    CInterface {
        /// The symbol.
        symbol: String,
        /// Whether a `workspace_pools` struct is passed.
        pools: bool,
    },
    /// A packed function taking every input, then every output as `DLTensor` handles.
    Packed {
        /// The symbol (`tvmgen_<m>_run`, `tvmgen_<m>___tvm_main__`, …).
        symbol: String,
    },
    /// A plain C function with one pointer per input, then per output.
    Unpacked {
        /// The symbol (`tvmgen_<m>___tvm_main__` or `tvmgen_<m>_run_model`).
        symbol: String,
    },
}

impl AotCall {
    /// The C symbol that is called.
    pub fn symbol(&self) -> &str {
        match self {
            AotCall::CInterface { symbol, .. } | AotCall::Packed { symbol } | AotCall::Unpacked { symbol } => symbol,
        }
    }
}

/// An AOT model.
#[derive(Clone, Debug)]
pub struct AotExec {
    /// How to call it.
    pub call: AotCall,
    /// Human-readable name of the style (for `inspect`).
    pub style: String,
    /// Pools that the C owns (USMP `global_workspace` / `global_const_workspace`), if any.
    pub usmp: Option<UsmpPools>,
    /// Pools the application must provide (`struct tvmgen_<m>_workspace_pools`): name and bytes.
    pub external_pools: Vec<(String, u64)>,
    /// The member name of the interface header (`tvmgen_<m>.h`), when the archive has one.
    pub header: Option<String>,
    /// Bytes `TVMBackendAllocWorkspace` must serve (0 for USMP builds), before alignment slack.
    pub workspace_bytes: u64,
    /// Where `workspace_bytes` came from.
    pub workspace_source: String,
    /// Most workspace allocations that can be live at once (AOT main + the deepest kernel), for
    /// computing alignment slack.
    pub max_live_allocations: u64,
    /// When the main function is called directly with USMP pools (external parameters: the
    /// pools were taken out of the C), the pools it takes after the outputs, in order.
    pub main_pools: Vec<MainPool>,
}

/// A USMP pool passed to the AOT main function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MainPool {
    /// The main's parameter name (`global_const_workspace_0_var`, …).
    pub name: String,
    /// Constants (read from a `ParamSource`) or workspace (in the arena).
    pub constant: bool,
    /// Bytes.
    pub bytes: u64,
}

/// USMP pools compiled into the C.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UsmpPools {
    /// `global_workspace` bytes (RAM).
    pub workspace_bytes: u64,
    /// `global_const_workspace` bytes (flash), when present.
    pub constant_bytes: Option<u64>,
}

//! What a backend is: the [`Backend`] trait, what the build gives it to generate a module and
//! what it gives back, and the [`Toolchain`] it may compile C with.

use proc_macro2::TokenStream;

use super::picture::Picture;
use crate::codegen::IncludePath;
use crate::codegen::tvm::ParamCode;
use crate::error::Result;
use crate::model::ModelDesc;
use crate::plan::aot::InlineWorkspace;
use crate::plan::report::MemoryReport;
use crate::plan::split::Split;
use crate::plan::stack::Frames;

/// What a backend does with a model.
pub trait Backend {
    /// `graph`, `aot` or `kmodel`.
    fn kind(&self) -> &'static str;

    /// Whether the build step builds this model (compiles C, writes a module into `OUT_DIR`);
    /// an error that says why not and what to do instead otherwise (then `include_model!`
    /// generates the module itself). Built by default.
    fn check_build_step(&self) -> Result<()> {
        Ok(())
    }

    /// C functions the model calls that its C or objects must define (checked when linking).
    fn required_functions(&self) -> &[String];

    /// Why the model's parameters cannot live outside the program image, if they cannot (by
    /// default they can).
    fn external_refusal(&self) -> Option<String> {
        None
    }

    /// The parameter files of external parameters and, when taking them out changes the code
    /// (an AOT constant pool, constant arrays, TVM 0.8 linked parameters), the model whose code
    /// no longer holds them.
    fn split_params(&self, toolchain: &dyn Toolchain) -> Result<(Option<ModelDesc>, Split)>;

    /// Plans the model's memory and generates its module.
    fn generate(&self, opts: &Generate<'_>) -> Result<Generated>;

    /// The memory report of the model as planned, before its C is measured.
    fn memory(&self, module_name: &str, target: &str, mlf_module: Option<&str>) -> Result<MemoryReport>;

    /// The picture of the model's memory plan (`name`: the module name, shown in the title).
    fn picture(&self, name: &str) -> Result<Picture>;

    /// For profiling, when operators run inside the model's own C (an AOT main calling its
    /// kernels): the model whose C calls `hook(index, edge)` around each operator, and the
    /// operators' names in call order. `None` (the default) when the runtime itself calls the
    /// profile hook around each operator (graph, kmodel) or the calls cannot be instrumented.
    fn instrument_for_profile(&self, _hook: &str) -> Result<Option<(ModelDesc, Vec<String>)>> {
        Ok(None)
    }

    /// Whether the model's C serves its own workspace inline (an AOT model whose code is all C
    /// that mlf compiles), and how; `None` (the default): it calls the runtime's
    /// `TVMBackendAllocWorkspace`.
    fn inline_workspace(&self) -> Option<InlineWorkspace> {
        None
    }

    /// What the plan says of each operator the profile hook reports, in run order: its arena
    /// window and its parameters' bytes (empty when the backend cannot say).
    fn operator_memory(&self) -> Result<Vec<OperatorMemory>> {
        Ok(Vec::new())
    }

    /// The interface name `inspect` reports.
    fn interface(&self) -> &'static str;

    /// `inspect`'s section of this executor: its key in the JSON report and its value.
    fn inspect_json(&self) -> (&'static str, serde_json::Value);

    /// `inspect`'s table lines right after the executor line (`entry`, `workspace`).
    fn inspect_head(&self, out: &mut String);

    /// `inspect`'s table lines after the inputs and outputs: parameters, memory, code.
    fn inspect_body(&self, out: &mut String);

    /// `inspect`'s table lines after the facts and warnings: whether parameters can be external.
    fn inspect_tail(&self, out: &mut String);
}

/// One operator as the memory plan sees it (for `cargo mlf run --profile`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct OperatorMemory {
    /// The operator's name, as the profile hook reports it.
    pub name: String,
    /// The arena bytes it reads and writes (its tensors and scratch), as the plan places them:
    /// from the lowest offset to the highest end; `None` when it uses none or the plan does not
    /// say.
    pub window: Option<(u64, u64)>,
    /// Bytes of its tensors and scratch in the arena (within the window).
    pub arena_bytes: u64,
    /// Bytes of the parameters it reads.
    pub param_bytes: u64,
}

/// Compiles the model's C when a backend needs what the compiler makes of it.
pub trait Toolchain {
    /// Compiles `text` (the C file `member`) alone and returns the bytes of each static object
    /// of `symbols` as the compiler laid it out for the target.
    fn static_bytes(&self, member: &str, text: &str, symbols: &[&str]) -> Result<Vec<Vec<u8>>>;
}

/// What the build gives a backend to generate a module.
pub struct Generate<'a> {
    /// Prefix the model's C symbols are renamed with (`mlf_<hash>_`).
    pub symbol_prefix: &'a str,
    /// Where the module finds its parameters: embedded files, or external files read at run
    /// time, resident, streamed or lazy.
    pub params: ParamCode<'a>,
    /// The module name `include_model!` uses.
    pub module_name: &'a str,
    /// The model file's name, for documentation.
    pub file_name: &'a str,
    /// Where `include_bytes!` reads the model file from (a kmodel, which the module embeds).
    pub model_file: Option<&'a IncludePath>,
    /// The target triple the C is compiled for.
    pub target: &'a str,
    /// The MLF module read from a multi-module archive, if one was chosen.
    pub mlf_module: Option<&'a str>,
    /// The stack frames of the compiled C (`None` when it was not compiled: the module then
    /// states no stack figure).
    pub frames: Option<&'a Frames>,
    /// The shared arena (`mlf_runtime::shared_arena!`, named by its module beside the model's)
    /// the module's memory lives in; `None`: an arena of its own.
    pub shared_arena: Option<&'a str>,
    /// The link sections the module's arena and parameters go in (`arena_section`,
    /// `params_section`); by default none.
    pub sections: crate::codegen::section::Sections<'a>,
    /// With profiling on, the operators the instrumented C reports to the module's profile hook
    /// (from [`Backend::instrument_for_profile`]); `None`: no hook in the module.
    pub profiled_calls: Option<&'a [String]>,
    /// The workspace the model's C was compiled to serve inline (from
    /// [`Backend::inline_workspace`]); `None`: the C calls the runtime's functions.
    pub inline_workspace: Option<InlineWorkspace>,
}

/// A generated module and what the build reports about it.
pub struct Generated {
    /// The module's items (with the markers of comments and empty lines, see
    /// [`crate::codegen::render`]).
    pub tokens: TokenStream,
    /// Static RAM the module allocates.
    pub arena_bytes: u64,
    /// Static RAM for external parameters (resident region or staging buffer).
    pub param_ram_bytes: u64,
    /// One line for the module's documentation.
    pub summary: String,
    /// The memory report of the plan the module was generated from (C not measured).
    pub report: MemoryReport,
}

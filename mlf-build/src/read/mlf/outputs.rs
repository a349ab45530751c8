//! What an MLF module's outputs are called.

use crate::read::graph::default_output_names;
use crate::read::metadata::ModuleMeta;
use crate::read::relay::RelayMain;

/// Output names: relay `output_tensor_names`, else metadata (single output), else `output` /
/// `output<i>` (TVM's convention).
pub(super) fn output_names(n: usize, relay: Option<&RelayMain>, module: &ModuleMeta) -> Vec<String> {
    if let Some(names) = relay.and_then(|r| r.output_names.as_ref()) {
        if names.len() == n {
            return names.clone();
        }
    }
    if n == 1 {
        if let Some(main) = module.memory.cpu_main() {
            if main.outputs.len() == 1 {
                return vec![main.outputs[0].name.clone()];
            }
        }
    }
    default_output_names(n)
}

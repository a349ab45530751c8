//! Finding the AOT main in a model's C: the function that calls the operators, under the
//! names TVM's AOT executor gives it.

use crate::model::ModelDesc;

/// The AOT main defined in `desc`'s C (the function that calls the operators), if any.
pub(super) fn main_function(desc: &ModelDesc) -> Option<String> {
    let m = crate::support::names::sanitize(&desc.name).to_ascii_lowercase();
    [format!("tvmgen_{m}___tvm_main__"), format!("tvmgen_{m}_run_model"), "tvm__run_func".to_string()]
        .into_iter()
        .find(|n| desc.code.definition(n).is_some())
}

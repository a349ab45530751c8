//! One backend per executor (graph, AOT, kmodel, Relax): everything the build, the reports and the
//! command line do differently for a model of that kind — whether and how its parameters can
//! live outside the program image, its memory plan, its generated module, its memory figures,
//! the picture of its plan and its part of `inspect`. [`of`] is the one place that looks at which
//! executor a model has; adding an executor means adding one implementation of [`Backend`].

mod aot;
mod aot_main;
mod aot_pool;
pub(crate) mod aot_profile;
mod api;
mod c_arrays;
mod graph;
mod kmodel;
mod linked;
#[cfg(feature = "build")]
pub(crate) mod object_sections;
#[cfg(not(feature = "build"))]
pub(crate) mod object_sections {
    //! Without the `build` feature (the `include_model!` macro's kmodels) objects are not read.

    use crate::error::{Error, Result};
    use crate::model::ObjectFile;
    use crate::plan::split::Split;

    /// `split` unchanged for a model without objects; an error otherwise.
    pub(crate) fn take_out_sections(objects: &[ObjectFile], split: Split) -> Result<Split> {
        if objects.is_empty() {
            Ok(split)
        } else {
            Err(Error::unsupported("taking constants out of LLVM objects needs mlf-build's `build` feature"))
        }
    }
}
mod picture;
mod pool_picture;
mod relax;
mod tvm;

use crate::error::Result;
use crate::model::{Executor, Kpu, ModelDesc};
use crate::plan::report::{MemoryReport, SectionSizes};

pub use api::{Backend, Generate, Generated, OperatorMemory, Toolchain};
pub use picture::{BoxKind, Picture, PlanBox};

/// The backend of `desc`'s executor (a kmodel's KPU layers on the device model).
pub fn of(desc: &ModelDesc) -> Box<dyn Backend + '_> {
    of_on(desc, Kpu::DeviceModel)
}

/// The backend of `desc`'s executor, a kmodel's KPU layers running on `kpu` (the other
/// executors have no KPU).
pub fn of_on(desc: &ModelDesc, kpu: Kpu) -> Box<dyn Backend + '_> {
    match &desc.executor {
        Executor::Graph(exec) => Box::new(graph::GraphBackend { desc, exec }),
        Executor::Aot(exec) => Box::new(aot::AotBackend { desc, exec }),
        Executor::Kmodel(exec) => Box::new(kmodel::KmodelBackend { desc, exec, kpu }),
        Executor::Relax(exec) => Box::new(relax::RelaxBackend { desc, exec }),
    }
}

/// Whether the build step builds `desc` (a kmodel has none: `include_model!` reads it).
pub fn has_build_step(desc: &ModelDesc) -> bool {
    of(desc).check_build_step().is_ok()
}

/// The memory report of `desc` from its description and plan alone, with the C's section sizes
/// when it was compiled. A kmodel is not planned: its figures come from the description (KPU
/// layers on the device model; [`memory_report_on`] chooses).
pub fn memory_report(
    desc: &ModelDesc,
    module_name: &str,
    target: &str,
    mlf_module: Option<&str>,
    sections: Option<SectionSizes>,
) -> Result<MemoryReport> {
    memory_report_on(desc, module_name, target, mlf_module, sections, Kpu::DeviceModel)
}

/// Like [`memory_report`], a kmodel's KPU layers running on `kpu`.
pub fn memory_report_on(
    desc: &ModelDesc,
    module_name: &str,
    target: &str,
    mlf_module: Option<&str>,
    sections: Option<SectionSizes>,
    kpu: Kpu,
) -> Result<MemoryReport> {
    let mut r = of_on(desc, kpu).memory(module_name, target, mlf_module)?;
    r.apply_sections(sections);
    Ok(r)
}

//! The template variables that depend on the model: how the host program reads each input and
//! shows each output, and the firmware's input statics.

use mlf_build::Error;
use mlf_build::{ModelDesc, TensorInfo};

use crate::template;

fn shape_const(t: &TensorInfo) -> String {
    format!("{}_SHAPE", mlf_build::__private::names::const_ident(&t.ident))
}

pub fn host_vars(desc: &ModelDesc, module: &str) -> Result<Vec<(&'static str, String)>, Error> {
    let mut read = String::new();
    for (i, t) in desc.inputs.iter().enumerate() {
        let call = template::read_call(t, "input", &format!("&files, {i}"))?;
        read.push_str(&format!(
            "    let {id} = {call}; // {name}: {dtype} {shape:?}\n",
            id = t.ident,
            name = t.name,
            dtype = t.dtype,
            shape = t.shape
        ));
    }
    let mut show = String::new();
    for t in &desc.outputs {
        template::elem_type(t)?;
        show.push_str(&format!("    show({:?}, &{module}::{}, &out.{}[..]);\n", t.ident, shape_const(t), t.ident));
    }
    let usage =
        desc.inputs.iter().map(|t| format!("{} {} {:?}", t.ident, t.dtype, t.shape)).collect::<Vec<_>>().join("; ");
    let example = desc.inputs.iter().map(|t| format!("{}={}.bin", t.ident, t.ident)).collect::<Vec<_>>().join(" ");
    Ok(vec![
        ("read_inputs", read.trim_end().to_string()),
        ("show_outputs", show.trim_end().to_string()),
        (
            "input_names",
            desc.inputs.iter().map(|t| format!("({:?}, {:?})", t.name, t.ident)).collect::<Vec<_>>().join(", "),
        ),
        ("input_usage", usage),
        ("example_args", example),
    ])
}

/// The firmware templates' variables: the input statics (a reference vector's, or zeros), the
/// comparison with the reference, and the first output.
pub fn firmware_vars(
    desc: &ModelDesc,
    module: &str,
    case: Option<&super::vectors::Case>,
) -> Result<Vec<(&'static str, String)>, Error> {
    let first = desc.outputs.first().ok_or_else(|| Error::invalid("the model has no outputs").in_file(&desc.path))?;
    template::elem_type(first)?;
    let mut vars = match case {
        Some(c) => {
            let (statics, check) = c.vars(desc, module)?;
            vec![
                ("static_inputs", statics),
                ("check_reference", check),
                ("reference_helpers", super::vectors::HELPERS.to_string()),
            ]
        }
        None => super::vectors::zeros(desc)?,
    };
    vars.push(("first_output", first.ident.clone()));
    Ok(vars)
}

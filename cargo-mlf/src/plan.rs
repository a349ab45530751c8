//! `cargo mlf plan MODEL [--svg FILE] [--module NAME]`: the static memory plan of a model,
//! summarised, and drawn as SVG.

use std::path::PathBuf;

use mlf_build::Error;

use mlf_build::__private::size::human;

/// Arguments of `plan`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The model: an MLF `.tar` or extracted folder.
    model: PathBuf,
    /// Write a picture of the plan (SVG): tensors as boxes over operator calls and arena
    /// offsets, the peak marked, parameters in flash beside it.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// The module to read from an MLF that holds several.
    #[arg(long)]
    module: Option<String>,
}

/// Runs `plan`.
pub fn run(args: Args) -> Result<(), Error> {
    let desc = mlf_build::open_with(&args.model, &mlf_build::ReadOptions { module: args.module.clone() })?;
    let name = desc.default_module_name(&args.model);
    let picture = mlf_build::__private::svg::picture(&desc, &name)?;
    let (col, peak) = picture.peak();
    println!("{}", picture.title);
    println!(
        "  {} buffers in the arena; peak: {peak} bytes live at call {col} ({})",
        picture.boxes.len(),
        picture.columns.get(col).map(String::as_str).unwrap_or("")
    );
    let flash: u64 = picture.flash.iter().map(|f| f.1).sum();
    println!("  {}: {flash} bytes ({}) in {} arrays", picture.flash_caption, human(flash), picture.flash.len());
    println!("  stack: known once the C is compiled (`cargo mlf build --plan-svg DIR` draws it beside the arena)");
    if let Some(path) = &args.svg {
        mlf_build::__private::output::write_file(path, picture.to_svg().as_bytes())?;
        println!("  wrote {}", path.display());
    }
    Ok(())
}

//! YOLO, 20 VOC classes (kmodel V4, KPU layers emulated) on the dog picture: bit for bit the
//! independent emulator's output (as on the host).
#![no_std]
#![no_main]

include!(concat!(env!("OUT_DIR"), "/yolo_v4.rs"));

/// The picture (3×240×320 bytes, planar RGB), used in place.
fn picture(bytes: &'static [u8]) -> Option<&'static [u8; 230_400]> {
    bytes.try_into().ok()
}

kmodels::kmodel_program!(yolo_v4, picture, bit_exact = true);

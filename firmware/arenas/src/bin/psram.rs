//! The program of `two-models` with the shared arena in the second RAM region (PSRAM, the link
//! section `.psram`): ResNet-8 (graph executor) and KWS (AOT) taking turns, every case exact.
#![no_std]
#![no_main]

// The package's library carries the models' compiled C: a program must use it to link them.
use arenas as _;

include!(concat!(env!("OUT_DIR"), "/psram.rs"));

arenas::resnet_and_kws_program!();

//! ResNet-8 (int8, graph executor) and KWS (int8, AOT with the C interface) on one shared arena
//! (with `apart`: each on its own), taking turns twice (ResNet-8, KWS, ResNet-8, KWS), every
//! reference case of each exact. The arena is the larger model's (ResNet-8's), not the sum.
#![no_std]
#![no_main]

// The package's library carries the models' compiled C: a program must use it to link them.
use arenas as _;

include!(concat!(env!("OUT_DIR"), "/two.rs"));

arenas::resnet_and_kws_program!();

//! KWS int8, AOT executor with the C interface (`kws-int8-aot-c`): every reference case exact.
#![no_std]
#![no_main]

include!(concat!(env!("OUT_DIR"), "/kws_aot.rs"));
kws::kws_program!(kws_aot, aot);

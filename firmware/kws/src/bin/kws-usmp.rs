//! KWS int8, AOT executor with USMP pools inside the C (`kws-int8-aot-usmp`): every reference case exact.
#![no_std]
#![no_main]

include!(concat!(env!("OUT_DIR"), "/kws_usmp.rs"));
kws::kws_program!(kws_usmp, aot);

//! KWS int8, graph executor (`kws-int8-graph`): every reference case exact.
#![no_std]
#![no_main]

include!(concat!(env!("OUT_DIR"), "/kws_graph.rs"));
kws::kws_program!(kws_graph, graph);

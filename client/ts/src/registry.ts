// The registry a session builds its sim from by default (SessionOptions.sims): the sims
// this package has, the hashchain.

import { HASHCHAIN_NAME, HASHCHAIN_VERSION, HashChain } from "./hashchain.js";
import { SimRegistry } from "./sim.js";

/** The registry sessions use by default: the hashchain sim; register your own sims here. */
export const defaultSims = new SimRegistry();
defaultSims.register(HASHCHAIN_NAME, HASHCHAIN_VERSION, (cfg) => new HashChain(cfg));

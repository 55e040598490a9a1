import { Errors } from '../contract/errors.js';
import type { Inference, Runtime } from './runtime.js';

/** Routes that need the models answer 503 while startup (model load and warm-up) is still running. */
export function requireInference(rt: Runtime): Inference {
  if (!rt.inference) throw Errors.serviceNotReady();
  return rt.inference;
}

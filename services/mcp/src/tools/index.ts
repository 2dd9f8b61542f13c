import { keyedOwner, publicOwner } from '@gateway/topology';
import { cancelJob } from './cancel-job';
import { chat } from './chat';
import { generateImage } from './generate-image';
import { getCredits } from './get-credits';
import { getGeneration } from './get-generation';
import { getJob } from './get-job';
import { getKey } from './get-key';
import { getModel } from './get-model';
import { listJobs } from './list-jobs';
import { listModels } from './list-models';
import { quote } from './quote';
import { submitJob } from './submit-job';
import type { ToolDef } from './tool';

export type { Caller, ToolDeps } from './tool';

// biome-ignore lint/suspicious/noExplicitAny: each tool keeps its own input type; the list only needs the common shape
type AnyTool = ToolDef<any, any>;

export const ALL_TOOLS: AnyTool[] = [
  listModels,
  getModel,
  getCredits,
  getKey,
  quote,
  chat,
  generateImage,
  submitJob,
  getJob,
  cancelJob,
  listJobs,
  getGeneration,
];

/** A route is built when the service table names its owner (keyed, or public for a GET). */
const routeBuilt = (path: string) => keyedOwner(path) !== undefined || publicOwner(path) !== undefined;

/** The tools whose every route exists in this gateway; the rest are not offered (tools/list, tools/call alike). */
export function availableTools(): AnyTool[] {
  return ALL_TOOLS.filter((t) => t.routes.every(routeBuilt));
}

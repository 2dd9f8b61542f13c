import { trailingDays } from '../days';
import { COMPONENTS, type ComponentKey } from './components';
import type { Latest } from './monitor';
import { WINDOW_DAYS } from './store';
import { type DayCounts, type DayState, dayState, overallStatus, STATUS_OF_OUTCOME, type Status } from './vocabulary';

export interface HistoryDay {
  date: string;
  state: DayState;
  uptime: number | null;
  sampleCount: number;
}

export interface ComponentStatus {
  key: ComponentKey;
  name: string;
  description: string;
  status: Status;
  uptime: number | null;
  latencyMs: number;
  latencyMeaning: string;
  sampleCount: number;
  checkedAt: string | null;
  history: HistoryDay[];
}

export interface StatusBody {
  overall: Status;
  monitored: boolean;
  windowDays: number;
  generatedAt: string;
  components: ComponentStatus[];
}

const NO_SAMPLES: DayCounts = { samples: 0, ok: 0, degraded: 0, down: 0 };

/** Exactly WINDOW_DAYS entries, oldest first, the last one today (UTC); a day without samples is `none` with uptime null. */
export function historyOf(now: Date, days: Map<string, DayCounts> | undefined): HistoryDay[] {
  return trailingDays(now, WINDOW_DAYS).map((date) => {
    const c = days?.get(date) ?? NO_SAMPLES;
    return { date, state: dayState(c), uptime: c.samples ? c.ok / c.samples : null, sampleCount: c.samples };
  });
}

/**
 * The GET /v1/status body. `latest`: each component's newest measurement (absent: never measured, UNCONFIGURED).
 * `monitored` false (the monitor is switched off) makes every component and the whole UNCONFIGURED; the stored
 * history is still shown.
 */
export function statusBody(now: Date, monitored: boolean, latest: Map<string, Latest>, days: Map<string, Map<string, DayCounts>>): StatusBody {
  const components = COMPONENTS.map((c): ComponentStatus => {
    const history = historyOf(now, days.get(c.key));
    const samples = history.reduce((n, d) => n + d.sampleCount, 0);
    const ok = [...(days.get(c.key)?.values() ?? [])].reduce((n, d) => n + d.ok, 0);
    const last = monitored ? latest.get(c.key) : undefined;
    return {
      key: c.key,
      name: c.name,
      description: c.description,
      status: last ? STATUS_OF_OUTCOME[last.outcome] : 'UNCONFIGURED',
      uptime: samples ? Math.min(1, ok / samples) : null,
      latencyMs: last ? Math.round(last.latencyMs) : 0,
      latencyMeaning: c.latencyMeaning,
      sampleCount: samples,
      checkedAt: last?.at ?? null,
      history,
    };
  });
  const overall = monitored ? overallStatus(components) : 'UNCONFIGURED';
  return { overall, monitored: overall !== 'UNCONFIGURED', windowDays: WINDOW_DAYS, generatedAt: now.toISOString(), components };
}

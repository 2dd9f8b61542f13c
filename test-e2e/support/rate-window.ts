/**
 * The rate meters' windows are aligned to the clock (a 60 s window ends on the minute). A test that must see a
 * count reach its limit inside one window calls this first: when too little of the current window is left for its
 * requests, it waits for the next window to begin, so a boundary never resets the count halfway.
 */
export async function inFreshWindowIfNeeded(needMs = 20_000, windowMs = 60_000): Promise<void> {
  const left = windowMs - (Date.now() % windowMs);
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 250));
}

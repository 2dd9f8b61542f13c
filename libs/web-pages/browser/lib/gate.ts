/// <reference lib="dom" />
import { ApiError, describe } from './api';
import { byId } from './dom';

/**
 * The credential's life in the page: read from a form field with no name (so a form submitted without script sends
 * nothing, and the policy's form-action 'none' blocks it anyway), kept in this tab's sessionStorage only, and
 * dropped on "Forget" or when the gateway refuses it. Never a cookie, localStorage or the URL.
 */
export interface Gate {
  /** The credential in use, if any. */
  token(): string | undefined;
  /** Shows the form again with `message` (a refusal), forgetting the credential. */
  refuse(message: string): void;
}

export function credentialGate(storageKey: string, onOpen: (token: string) => void): Gate {
  const form = byId<HTMLFormElement>('login');
  const input = byId<HTMLInputElement>('credential');
  const app = byId('app');
  const error = byId('login-error');
  const forget = byId<HTMLButtonElement>('forget');

  const show = (open: boolean) => {
    form.hidden = open;
    app.hidden = !open;
    forget.hidden = !open;
  };
  const open = (token: string) => {
    error.hidden = true;
    show(true);
    // After the caller has its gate in hand: the first load may need to refuse through it.
    queueMicrotask(() => onOpen(token));
  };

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const token = input.value.trim();
    input.value = '';
    if (!token) return;
    sessionStorage.setItem(storageKey, token);
    open(token);
  });
  forget.addEventListener('click', () => {
    sessionStorage.removeItem(storageKey);
    error.hidden = true;
    show(false);
    input.focus();
  });

  const stored = sessionStorage.getItem(storageKey);
  if (stored) open(stored);
  else show(false);

  return {
    token: () => sessionStorage.getItem(storageKey) ?? undefined,
    refuse(message) {
      sessionStorage.removeItem(storageKey);
      error.textContent = message;
      error.hidden = false;
      show(false);
      input.focus();
    },
  };
}

/** Puts a section's failure in its error line (role=alert), or clears it. */
export function sectionError(id: string, message?: string): void {
  const el = byId(id);
  el.textContent = message ?? '';
  el.hidden = !message;
}

/** A section's load or action run through `guardedSection` with the page's gate. */
export type Guard = (errorId: string, work: () => Promise<void>) => Promise<void>;

/**
 * Runs one section's load or action: its error line is cleared when it succeeds and shows the failure when not,
 * but a refused credential (401) goes back to the gate's form, since every other section would be refused too.
 */
export async function guardedSection(gate: Gate, errorId: string, work: () => Promise<void>): Promise<void> {
  try {
    await work();
    sectionError(errorId);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) gate.refuse(describe(err));
    else sectionError(errorId, describe(err));
  }
}

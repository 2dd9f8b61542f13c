// jest-circus reads the test timeout from the global config only; a project's `testTimeout` is shown by
// --showConfig but never applied, so each project that needs longer than the 5 s default sets it here.
jest.setTimeout(20_000);

/**
 * The 44-byte header of a canonical WAV file: RIFF/WAVE, one `fmt ` chunk of 16-bit PCM, then the `data` chunk of
 * `dataBytes` bytes, which follow the header.
 */
export function wavHeader(sampleRate: number, channels: number, dataBytes: number): Buffer {
  const bytesPerSample = 2;
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'latin1');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8, 'latin1');
  h.write('fmt ', 12, 'latin1');
  h.writeUInt32LE(16, 16); // fmt chunk size
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * channels * bytesPerSample, 28); // byte rate
  h.writeUInt16LE(channels * bytesPerSample, 32); // block align
  h.writeUInt16LE(8 * bytesPerSample, 34);
  h.write('data', 36, 'latin1');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

import { decodeAudioData } from './audio-data';

describe('input_audio.data decoding', () => {
  const bytes = Buffer.from([0x52, 0x49, 0x46, 0x46, 0xff, 0xfe, 0x00, 0x7f]);
  const b64 = bytes.toString('base64');

  it('decodes bare base64', () => {
    expect(decodeAudioData(b64)).toEqual(bytes);
  });

  it('decodes a data: URL, whatever type it names', () => {
    expect(decodeAudioData(`data:audio/wav;base64,${b64}`)).toEqual(bytes);
    expect(decodeAudioData(`DATA:application/octet-stream;base64,${b64}`)).toEqual(bytes);
  });

  it('decodes unpadded, URL-safe and line-wrapped base64', () => {
    expect(decodeAudioData(b64.replace(/=+$/, ''))).toEqual(bytes);
    expect(decodeAudioData(bytes.toString('base64url'))).toEqual(bytes);
    expect(decodeAudioData(`${b64.slice(0, 4)}\n${b64.slice(4)}`)).toEqual(bytes);
  });

  it.each([
    ['a character outside the alphabet', `${b64.slice(0, 4)}!${b64.slice(4)}`],
    ['padding in the middle', `UklG=${b64}`],
    ['a length no base64 has', 'UklGR'],
    ['padding on a length that is not a multiple of 4', 'UklGRg='],
    ['nothing after the prefix', 'data:audio/wav;base64,'],
  ])('refuses %s as invalid base64', (_why, data) => {
    expect(() => decodeAudioData(data)).toThrow(/input_audio\.data is not valid base64/);
  });

  it('refuses a data: URL that is not base64', () => {
    expect(() => decodeAudioData('data:audio/wav,RIFF')).toThrow(/a data: URL must be base64/);
    expect(() => decodeAudioData('data:audio/wav;base64')).toThrow(/a data: URL must be base64/);
  });

  it('answers 400 invalid_request', () => {
    expect(() => decodeAudioData('%%%')).toThrow(expect.objectContaining({ code: 'invalid_request', status: 400 }));
  });
});

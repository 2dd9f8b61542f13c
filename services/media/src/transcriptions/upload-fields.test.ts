import { transcriptionUpload } from './schema';
import { containerOf, uploadFields } from './upload-fields';

describe('a multipart upload read as the transcription request', () => {
  it.each([
    [{ filename: 'clip.wav', mimeType: 'application/octet-stream' }, 'wav'],
    [{ filename: 'CLIP.MP3', mimeType: '' }, 'mp3'],
    [{ filename: 'talk.mpga', mimeType: '' }, 'mp3'],
    [{ filename: 'talk.mp4', mimeType: 'audio/mp4' }, 'm4a'],
    [{ filename: 'blob', mimeType: 'audio/x-wav' }, 'wav'],
    [{ filename: '', mimeType: 'audio/webm' }, 'webm'],
    [{ filename: 'clip.aiff', mimeType: 'audio/wav' }, 'aiff'],
    [{ filename: '', mimeType: '' }, 'none'],
  ])('the container of %o is %s (its extension, else its media type)', (file, container) => {
    expect(containerOf(file)).toBe(container);
  });

  const upload = (fields: Array<[string, string[]]>, file?: { field: string; filename: string }) => ({
    fields: new Map(fields),
    file: file && { ...file, mimeType: '', data: Buffer.from('RIFF') },
  });

  it('fields become the schema input; granularities stay a list, sent once or several times', () => {
    const asked = transcriptionUpload.parse(
      uploadFields(
        upload(
          [
            ['model', ['a/stt']],
            ['response_format', ['verbose_json']],
            ['timestamp_granularities', ['word']],
          ],
          { field: 'file', filename: 'x.wav' },
        ),
      ),
    );
    expect(asked).toEqual({
      model: 'a/stt',
      response_format: 'verbose_json',
      timestamp_granularities: ['word'],
      file: { data: Buffer.from('RIFF'), format: 'wav' },
    });
  });

  it('a field sent twice where one value is wanted is refused, not one of them picked', () => {
    const r = transcriptionUpload.safeParse(uploadFields(upload([['model', ['a/x', 'a/y']]], { field: 'file', filename: 'x.wav' })));
    expect(r.success).toBe(false);
    expect(r.error?.issues[0].path).toEqual(['model']);
  });

  it('a file under another part name is no recording', () => {
    const r = transcriptionUpload.safeParse(uploadFields(upload([['model', ['a/x']]], { field: 'audio', filename: 'x.wav' })));
    expect(r.error?.issues.map((i) => i.path.join('.'))).toEqual(['file']);
  });
});

package renderer

import "switchyard.dev/switchyard/bus"

// fileRenderer keeps the text of the files a Renderer flushes, as the
// applier does: the Renderer itself keeps only their paths.
type fileRenderer struct {
	*Renderer
	files map[string]string
}

func newFileRenderer(cfg Config) *fileRenderer {
	return &fileRenderer{Renderer: NewRenderer(cfg), files: map[string]string{}}
}

func (f *fileRenderer) Flush() (bus.Output, []error) {
	out, errs := f.Renderer.Flush()
	for _, key := range out.Deletes {
		for path := range f.files {
			if fileKey(path) == key {
				delete(f.files, path)
			}
		}
	}
	for _, v := range out.Values {
		if file, ok := v.(bus.RenderedFile); ok {
			f.files[file.Path] = file.Content
		}
	}
	return out, errs
}

// Artifacts is what the renderer has produced so far.
func (f *fileRenderer) Artifacts() Artifacts {
	return Artifacts{Files: f.files, Backends: f.out.Backends, Certificates: f.out.Certificates}
}

# frozen_string_literal: true

# Rewrites of Rack 3.2.8 methods of the same names, derived from them (Rack is MIT licensed,
# Copyright (C) 2007-2021 Leah Neukirchen).
require 'rack/rewindable_input'

# Rack::RewindableInput#make_rewindable copies the input with `io.read(4096, buffer)`,
# relying on read to fill `buffer` in place, and trims it with slice!. Opal strings cannot
# be filled or trimmed in place (read returns the data instead), so the copy would be empty.
# Here the returned chunks are written out, and the file is unlinked at once (its
# descriptor stays open) rather than left to a GC finalizer. Same data as Rack 3.2.8.
module Rack
  class RewindableInput
    private

    def make_rewindable
      @rewindable_io = Tempfile.new('RackRewindableInput')
      @rewindable_io.chmod(0000)
      @rewindable_io.set_encoding(Encoding::BINARY)
      @rewindable_io.binmode
      if filesystem_has_posix_semantics?
        raise 'Unlink failed. IO closed.' if @rewindable_io.closed?

        # Unlinked now, as Rack's comment intends: the open descriptor keeps the data.
        @rewindable_io.unlink
        @unlinked = true
      end

      while (chunk = @io.read(1024 * 4))
        @rewindable_io.write(chunk)
      end
      @rewindable_io.rewind
    end
  end
end

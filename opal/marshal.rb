# frozen_string_literal: true

require 'rack_compat/bytes'
require 'marshal/writer'
require 'marshal/reader'

# Marshal for Opal, in MRI's format 4.8 byte for byte, so that data dumped by one runtime
# (a rack-session cookie, a cache entry) loads on the others. Opal's corelib has no Marshal
# unless asked for, and rack-session's default cookie coder calls Marshal.dump and
# Marshal.load. The format is read from Ruby's documentation (doc/marshal.rdoc) and from
# what MRI writes; Writer and Reader hold the details and the limits Opal's values impose.
module Marshal
  MAJOR_VERSION = 4
  MINOR_VERSION = 8

  # Marshal.dump(obj), Marshal.dump(obj, limit), Marshal.dump(obj, io[, limit]): the bytes
  # as a binary String, or `io` after they were written to it.
  def self.dump(obj, io = nil, limit = -1)
    if io.is_a?(Integer)
      limit = io
      io = nil
    end
    bytes = Writer.new(limit).dump(obj)
    return bytes unless io
    raise TypeError, 'instance of IO needed' unless io.respond_to?(:write)

    io.write(bytes)
    io
  end

  # Marshal.load(source, proc = nil, freeze: false); `source` is a String or responds to
  # `read` (its whole content is read).
  def self.load(source, proc = nil, freeze: false)
    source = source.read if !source.respond_to?(:to_str) && source.respond_to?(:read)
    raise TypeError, 'instance of IO needed' unless source.respond_to?(:to_str)

    # String#to_str on Opal drops the mark of a binary String, and with it its bytes.
    source = source.to_str unless source.is_a?(String)
    Reader.new(source, proc, freeze).load
  end

  class << self
    alias restore load
  end
end

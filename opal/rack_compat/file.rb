# frozen_string_literal: true
# backtick_javascript: true

require 'nodejs/file'
require 'rack_compat/bytes'

# File features Rack::Files (and so Rack::Static) needs that Opal's Node File lacks:
# File.size?, File.binread, and positioned reads (seek, read(n)) returning bytes. Opal's
# File#read slurps the whole file as text, once. Here reads go through fs.readSync at the
# file's own position; a file opened with "b" gives binary strings, others UTF-8 text.
class File
  def self.size?(path)
    size = `(function() { try { return require('fs').statSync(#{path}).size } catch (e) { return null } })()`
    `#{size} == null || #{size} == 0` ? nil : size
  end

  def self.binread(path)
    RackCompat::Bytes.from_buffer(`require('fs').readFileSync(#{path})`)
  end

  def seek(offset, whence = IO::SEEK_SET)
    base = case whence
           when IO::SEEK_CUR then pos
           when IO::SEEK_END then `require('fs').fstatSync(#{@fd}).size`
           else 0
           end
    @__pos = base + offset
    0
  end

  def pos
    @__pos || 0
  end
  alias tell pos

  def rewind
    @__pos = 0
    0
  end

  def eof?
    pos >= `require('fs').fstatSync(#{@fd}).size`
  end
  alias eof eof?

  def read(length = nil, outbuf = nil)
    want = length || (`require('fs').fstatSync(#{@fd}).size` - pos)
    return '' if want <= 0 && length.nil?
    return '' if length == 0

    buf = `Buffer.alloc(#{want})`
    got = `require('fs').readSync(#{@fd}, #{buf}, 0, #{want}, #{pos})`
    @__pos = pos + got
    return nil if got == 0 && length

    data = `#{buf}.subarray(0, #{got})`
    @binary_flag ? RackCompat::Bytes.from_buffer(data) : `#{data}.toString('utf8')`
  end
end

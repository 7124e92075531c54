# frozen_string_literal: true
# backtick_javascript: true

require 'nodejs/file'
require 'rack_compat/bytes'

# File features Rack::Files (and so Rack::Static) needs that Opal's Node File lacks:
# MRI's File.join, File.size?, File.binread, and positioned reads (seek, read(n)) returning bytes. Opal's
# File#read slurps the whole file as text, once. Here reads go through fs.readSync at the
# file's own position; a file opened with "b" gives binary strings, others UTF-8 text.

# The same join for the common call, plain Strings only (Sinatra joins its root and public
# folder on every request), without the Arrays, blocks and Regexp of the general path; null
# for anything else.
%x{
  function up_join_strings(parts) {
    var count = parts.length, result, part, end, i;
    if (count === 0) return null;
    for (i = 0; i < count; i++) {
      if (typeof parts[i] !== 'string') return null;
    }
    result = parts[0];
    for (i = 1; i < count; i++) {
      part = parts[i];
      if (part.charCodeAt(0) === 47) {
        end = result.length;
        while (end > 0 && result.charCodeAt(end - 1) === 47) end--;
        result = result.slice(0, end);
      } else if (result.charCodeAt(result.length - 1) !== 47) {
        result += '/';
      }
      result += part;
    }
    return result;
  }
}

class File
  # MRI's File.join: components joined by one "/" where neither side has one, runs of "/"
  # at a seam reduced (a leading "/" on the next part wins), nothing else normalised.
  # Opal's used Node's path.join, which also resolves "." and "..": Rack::Directory's
  # "Parent Directory" link pointed elsewhere than on MRI.
  def self.join(*parts)
    joined = `up_join_strings(parts)`
    return joined unless `joined === null`

    parts = parts.flatten.map { |x| x.respond_to?(:to_path) ? x.to_path : x.to_str }
    return '' if parts.empty?

    result = parts.first
    parts.drop(1).each do |part|
      if part.start_with?('/')
        result = result.sub(%r{/+\z}, '')
      elsif !result.end_with?('/')
        result += '/'
      end
      result += part
    end
    `#{result}.valueOf()`
  end

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

  # IO#set_encoding, which Opal's File lacks (Rack::Multipart::Generator sets BINARY on the
  # file it reads): BINARY reads bytes, as binmode does; any other encoding reads text.
  def set_encoding(encoding, *_rest)
    encoding = Encoding.find(encoding.to_s) unless encoding.is_a?(Encoding)
    @binary_flag = encoding.binary?
    self
  end
end

# File.stat and File::Stat, as Rack::Directory and Rack::Multipart::Generator use them:
# File.stat raises Errno::ENOENT for a missing path (Opal's made a Stat for anything), #size
# exists, and readable?/writable?/executable? answer true or false (Opal's returned the
# undefined that fs.accessSync returns on success, so every file looked unreadable).
class File
  def self.stat(path)
    `require('fs').statSync(#{path})`
    Stat.new(path)
  rescue Opal::Raw::Error => e
    raise Errno::ENOENT, path if `#{e}.code === 'ENOENT'`
    raise Errno::ELOOP, path if `#{e}.code === 'ELOOP'`

    raise IOError, `#{e}.message`
  end

  class Stat
    def size
      `require('fs').statSync(#{@path}).size`
    end

    def readable?
      __access(`require('fs').constants.R_OK`)
    end

    def writable?
      __access(`require('fs').constants.W_OK`)
    end

    def executable?
      __access(`require('fs').constants.X_OK`)
    end

    def __access(mode)
      `(function(p) { try { require('fs').accessSync(p, #{mode}); return true } catch (e) { return false } })(#{@path})`
    end
  end
end

# Dir.foreach, which Rack::Directory lists with: ".", "..", then the entries.
class Dir
  def self.foreach(path)
    return enum_for(:foreach, path) unless block_given?

    (['.', '..'] + `require('fs').readdirSync(#{path})`).each { |name| yield name }
    nil
  end
end

require 'nodejs/fileutils'

# FileUtils.copy_file: Rack::Multipart::UploadedFile copies the file it wraps into a
# Tempfile with it; Opal's Node FileUtils has only cp.
module FileUtils
  def copy_file(src, dest, preserve = false, dereference = true)
    `require('fs').copyFileSync(#{src}, #{dest})`
    nil
  end
  module_function :copy_file
end

# frozen_string_literal: true
# backtick_javascript: true

require 'nodejs/file'
require 'nodejs/dir'

# Opal's Node File and Dir hand their String arguments straight to fs and path, which throw
# ERR_INVALID_ARG_TYPE for a boxed String object (what Opal makes for strings with an
# encoding, e.g. every env value Rack::MockRequest builds with #b). Each File and Dir class
# method below gets its String arguments as primitive JS strings first.
#
# The wrapper is a plain JS function, not a Ruby method with a splat: Sinatra calls
# File.expand_path, dirname, join and file? on every request (its static file check).
module RackCompat
  module NodePaths
    def self.primitive(arg)
      arg.is_a?(String) ? `arg.valueOf()` : arg
    end

    def self.wrap(klass, names)
      names.each do |name|
        next unless klass.respond_to?(name)

        %x{
          var jsid = '$' + name, original = klass[jsid];
          var wrapper = function() {
            var block = wrapper.$$p, args = new Array(arguments.length), arg;
            wrapper.$$p = null;
            for (var i = 0; i < arguments.length; i++) {
              arg = arguments[i];
              args[i] = arg instanceof String ? arg.valueOf() : arg;
            }
            if (block != null) original.$$p = block;
            return original.apply(this, args);
          };
          wrapper.$$arity = original.$$arity;
          wrapper.$$parameters = original.$$parameters;
          Opal.defs(klass, jsid, wrapper);
        }
      end
    end
  end
end

RackCompat::NodePaths.wrap(File, %i[
  read write symlink delete unlink exist? realpath join directory? file? readable? size
  size? open stat mtime symlink? absolute_path expand_path basename dirname extname binread
])
RackCompat::NodePaths.wrap(Dir, %i[[] chdir mkdir entries glob foreach exist?])

class File
  alias __opal_initialize initialize

  def initialize(path, flags = 'r')
    __opal_initialize(RackCompat::NodePaths.primitive(path), flags)
  end

  class << self
    alias __opal_dirname dirname
    alias __opal_expand_path expand_path

    # MRI's answer for one level of a String path, without the RegExps Opal's builds on each
    # call: trailing separators and the last name go, and a run of leading separators is one
    # (MRI: File.dirname("//a/b") is "/a", where Opal's kept "//a").
    def dirname(path, level = 1)
      string = `typeof path === 'string' || path instanceof String`
      return __opal_dirname(path, level) unless string && level == 1

      %x{
        var dir = path.valueOf(), absolute = dir.charAt(0) === '/';
        dir = dir.replace(/\/+$/, '').replace(/[^\/]+$/, '').replace(/\/+$/, '');
        if (dir === '') return absolute ? '/' : '.';
        return dir.replace(/^\/\/+/, '/');
      }
    end

    # An absolute String path as MRI expands it (a base directory plays no part): '.' and
    # empty names go, '..' takes the name before it, and the leading separators stay as
    # written (MRI: File.expand_path("//a") is "//a", where Node's path.resolve gave "/a").
    def expand_path(path, basedir = nil)
      absolute = `(typeof path === 'string' || path instanceof String) && path.charAt(0) === '/'`
      return __opal_expand_path(path, basedir) unless absolute

      %x{
        var full = path.valueOf(), lead = /^\/+/.exec(full)[0], names = full.split('/'), kept = [];
        var name;
        for (var i = 0; i < names.length; i++) {
          name = names[i];
          if (name === '' || name === '.') continue;
          if (name === '..') kept.pop(); else kept.push(name);
        }
        return lead + kept.join('/');
      }
    end
  end
end

# frozen_string_literal: true
# backtick_javascript: true

# Backtraces and caller as MRI writes them, from the JS stack:
#
# - Opal read a V8 frame "at NAME (LOCATION)" up to the first " (", so a frame whose name
#   has parentheses, as "<top (required)>" has in a source-mapped stack, became
#   "required)> (file.rb:28:1:in `<top'". Here LOCATION is the last parenthesized part when
#   it has no parentheses itself; other lines are read as Opal read them.
# - The frames of Opal's runtime and corelib, and of these fixes, are left out, as MRI
#   leaves out its core, written in C: a `require` showed up as frames in
#   corelib/kernel.rb and opal_fixes/require.rb, which Sinatra took for the app's file, and
#   every `raise` began with a frame in corelib/kernel.rb. A backtrace made only of such
#   frames is kept whole. (Frames are known by file only in a source-mapped bundle, as
#   up_node runs it; elsewhere they all name the bundle and stay.)
%x{
  function up_frames(stack) {
    var lines = stack.$$is_string ? stack.split("\n") : stack, result = [], m, line;
    for (var i = 0; i < lines.length; i++) {
      line = lines[i];
      if (!line || !line.$$is_string) continue;
      if ((m = line.match(/^    at (.*) \(([^()]*)\)$/)) || (m = line.match(/^    at (.*?) \((.*?)\)$/))) {
        result.push(m[2] + ":in `" + m[1] + "'");
      } else if ((m = line.match(/^    at (.*?)$/))) {
        result.push(m[1] + ":in `undefined'");
      } else if ((m = line.match(/^  from (.*?)$/))) {
        result.push(m[1]);
      } else if ((m = line.match(/^(.*?)@(.*?)$/))) {
        result.push(m[2] + ":in `" + m[1] + "'");
      }
    }
    return result;
  }

  function up_without_core(frames) {
    return frames.filter(function(frame) {
      return !/\/opal\/corelib\/|\/opal\/opal_fixes\/|corelib\/runtime\.js/.test(frame);
    });
  }
}

class Exception
  def backtrace
    %x{
      if (self.backtrace) return self.backtrace;
      if (self.stack === undefined || self.stack === null) return [];
      var frames = up_frames(self.stack), outside = up_without_core(frames);
      return self.backtrace = outside.length > 0 ? outside : frames;
    }
  end
end

module Kernel
  # Frame 0 of the stack is this method's own.
  def caller(start = 1, length = nil)
    %x{
      var result = up_without_core(up_frames(new Error().stack).slice(1)).slice(start);
      return length === nil ? result : result.slice(0, length);
    }
  end
end

# frozen_string_literal: true

# opal/erb.rb against MRI's ERB: what each template renders in each trim mode, run as Tilt
# runs it (the source evaluated in an object, with an instance variable as the buffer).
require "erb"

class View
  def initialize
    @items = %w[apple pear]
    @title = "Fruit & <Veg>"
  end

  def render(template, trim_mode)
    instance_eval(ERB.new(template, trim_mode: trim_mode, eoutvar: "@_out_buf").src)
  end
end

TEMPLATES = [
  "<h1><%= ERB::Util.h(@title) %></h1>\n<ul>\n<% @items.each do |item| %>\n  <li><%= item %></li>\n<% end %>\n</ul>\n",
  "<% @items.each do |item| -%>\n  <%- if item == 'pear' -%>\n  pear!\n  <%- end -%>\n<%= item %>\n<% end -%>\ndone",
  "% @items.each do |item|\n%% <%= item %>\n% end\n100%% sure <%% not a tag %%>\n",
  "<%# a comment\n   on two lines %>text<%= 1 +\n 2 %> and <% x = 5 # note %><%= x %>\n",
  "a <%= 'b' %>\n<%= 'c' %>  \n  <% if true %>\nd\n<% end %>\n",
  "<%= \"50%%>\" %> <%= @items.map { |i| i.upcase }.join(\",\") %>\n"
].freeze

TEMPLATES.each do |template|
  [nil, "-", "<>", ">", "%", "%<>", "%-"].each do |mode|
    p [mode, View.new.render(template, mode)]
  rescue SyntaxError => e
    p [mode, e.class.to_s]
  rescue NameError => e # Opal raises NoMethodError, a NameError, for an unknown name
    p [mode, "NameError"]
  end
end
p ERB::Util.h(%(<a href="x">'&'</a>)), ERB::Util.url_encode("a b/é"), ERB.new("<%= 1 + 1 %>").result

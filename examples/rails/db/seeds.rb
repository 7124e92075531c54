# frozen_string_literal: true

# A handful of posts, so the index page has something to list.
10.times do |i|
  Post.create!(title: "Post #{i + 1}", body: "The body of post #{i + 1}.")
end
